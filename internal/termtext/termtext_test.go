package termtext

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestSafe(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain name", "plain name"},
		{"Ünïcødé-线程", "Ünïcødé-线程"},
		{"red\x1b[31m", `red\x1b[31m`},
		{"bell\a and tab\t", `bell\a and tab\t`},
		{"title\x1b]0;x\x07", `title\x1b]0;x\a`},
		{"caf\xe9", "caf\uFFFD"},
		{"rtl\u202eevil", `rtl\u202eevil`},
		{"line\u2028sep", `line\u2028sep`},
	} {
		assert.Equal(t, tc.want, Safe(tc.in), "%q", tc.in)
	}
}
