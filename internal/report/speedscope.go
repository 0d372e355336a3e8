package report

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/ctprof/ctprof/internal/analysis"
)

// The speedscope file format (https://www.speedscope.app/file-format-schema.json):
// frames are shared by all profiles; a sampled profile lists stacks as
// frame indices, root first, each with a weight.
type speedscopeFile struct {
	Schema             string              `json:"$schema"`
	Shared             speedscopeShared    `json:"shared"`
	Profiles           []speedscopeProfile `json:"profiles"`
	Name               string              `json:"name"`
	ActiveProfileIndex int                 `json:"activeProfileIndex"`
	Exporter           string              `json:"exporter"`
}

type speedscopeShared struct {
	Frames []speedscopeFrame `json:"frames"`
}

type speedscopeFrame struct {
	Name string `json:"name"`
}

type speedscopeProfile struct {
	Type       string  `json:"type"`
	Name       string  `json:"name"`
	Unit       string  `json:"unit"`
	StartValue int     `json:"startValue"`
	EndValue   int     `json:"endValue"`
	Samples    [][]int `json:"samples"`
	Weights    []int   `json:"weights"`
}

// SpeedscopeSchema is the $schema speedscope recognises its format by.
const SpeedscopeSchema = "https://www.speedscope.app/file-format-schema.json"

// Speedscope writes the stacks as a speedscope file with two profiles:
// every thread sample, and only the BLOCKED ones (the lock waits). Weights
// are thread samples (unit "none").
func Speedscope(w io.Writer, name string, stacks []*analysis.FoldedStack) error {
	f := speedscopeFile{Schema: SpeedscopeSchema, Name: name, Exporter: "ctprof"}
	index := map[string]int{}
	frameIDs := func(frames []string) []int {
		ids := make([]int, len(frames))
		for i, fr := range frames {
			id, ok := index[fr]
			if !ok {
				id = len(f.Shared.Frames)
				index[fr] = id
				f.Shared.Frames = append(f.Shared.Frames, speedscopeFrame{Name: fr})
			}
			ids[i] = id
		}
		return ids
	}
	all := speedscopeProfile{Type: "sampled", Name: "all threads", Unit: "none", Samples: [][]int{}, Weights: []int{}}
	blocked := speedscopeProfile{Type: "sampled", Name: "blocked threads", Unit: "none", Samples: [][]int{}, Weights: []int{}}
	for _, st := range stacks {
		ids := frameIDs(st.Frames)
		all.Samples = append(all.Samples, ids)
		all.Weights = append(all.Weights, st.Count)
		all.EndValue += st.Count
		if n := st.InState("BLOCKED"); n > 0 {
			blocked.Samples = append(blocked.Samples, ids)
			blocked.Weights = append(blocked.Weights, n)
			blocked.EndValue += n
		}
	}
	if f.Shared.Frames == nil {
		f.Shared.Frames = []speedscopeFrame{}
	}
	f.Profiles = []speedscopeProfile{all}
	if blocked.EndValue > 0 {
		f.Profiles = append(f.Profiles, blocked)
	}
	enc := json.NewEncoder(w)
	if err := enc.Encode(f); err != nil {
		return fmt.Errorf("write speedscope profile: %w", err)
	}
	return nil
}
