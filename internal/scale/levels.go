package scale

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseLevels reads rising positive levels such as "1,2,4". flag names
// where they came from in the error, which is the user's to fix.
func ParseLevels(s, flag string) ([]int, error) {
	var out []int
	for _, part := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%s: %q is not a positive whole number", flag, part)
		}
		if len(out) > 0 && n <= out[len(out)-1] {
			return nil, fmt.Errorf("%s: levels must rise, got %s", flag, s)
		}
		out = append(out, n)
	}
	return out, nil
}

// DefaultCPULevels is 1, 2, 4, … and all n: doubling spreads the levels
// over the whole range in few runs, and the last uses every CPU.
func DefaultCPULevels(n int) []int {
	var out []int
	for k := 1; k < n; k *= 2 {
		out = append(out, k)
	}
	return append(out, n)
}
