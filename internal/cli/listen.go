package cli

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/ctprof/ctprof/internal/metrics"
)

// startMetrics binds the metrics server of attach and serve, says where it
// serves, and serves until ctx ends; served reports the end.
func startMetrics(ctx context.Context, io IO, addr, webConfig string, top int) (srv *metrics.Server, served <-chan error, err error) {
	logger := slog.New(slog.NewTextHandler(io.ErrOut, &slog.HandlerOptions{Level: slog.LevelWarn}))
	srv, err = metrics.NewServer(metrics.ServerOptions{
		Addr: addr, WebConfigFile: webConfig, Logger: logger, Top: top, Version: Version(),
	})
	if err != nil {
		return nil, nil, listenHint(err)
	}
	where := "http://" + srv.Addr() + "/metrics"
	if webConfig != "" {
		where = srv.Addr() + "/metrics (TLS and auth per " + webConfig + ")"
	}
	fmt.Fprintf(io.ErrOut, "ctprof: serving metrics on %s\n", where)
	ch := make(chan error, 1)
	go func() { ch <- srv.Serve(ctx) }()
	return srv, ch, nil
}
