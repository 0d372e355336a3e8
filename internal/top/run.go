package top

import (
	"context"
	"errors"
	"fmt"
	"os"

	tea "github.com/charmbracelet/bubbletea"
)

// Run shows m full-screen on out until q, Ctrl-C (a key: the terminal is
// raw) or the end of ctx. feed runs in a goroutine of its own: it sends the
// view its Refresh and Stopped messages and returns once its context ends,
// which happens when the view does; Run returns after it. Keys come from
// in, or from the controlling terminal when in is nil (the input may be a
// log on a pipe).
func Run(ctx context.Context, m *Model, out, in *os.File, feed func(ctx context.Context, send func(tea.Msg))) error {
	opts := []tea.ProgramOption{tea.WithAltScreen(), tea.WithOutput(out), tea.WithoutSignalHandler()}
	if in != nil {
		opts = append(opts, tea.WithInput(in))
	} else {
		opts = append(opts, tea.WithInputTTY())
	}
	p := tea.NewProgram(m, opts...)
	feedCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		feed(feedCtx, p.Send)
	}()
	go func() {
		<-feedCtx.Done()
		p.Quit()
	}()
	_, err := p.Run()
	stop()
	<-done
	if err != nil && !errors.Is(err, tea.ErrProgramKilled) {
		return fmt.Errorf("terminal: %w", err)
	}
	return nil
}
