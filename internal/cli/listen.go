package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/ctprof/ctprof/internal/metrics"
)

// startMetrics binds the metrics server of attach and serve, says where it
// serves, and serves until ctx ends; served reports the end.
func startMetrics(ctx context.Context, io IO, addr, webConfig string, top, maxRequests int) (srv *metrics.Server, served <-chan error, err error) {
	logger := slog.New(slog.NewTextHandler(io.ErrOut, &slog.HandlerOptions{Level: slog.LevelWarn}))
	srv, err = metrics.NewServer(metrics.ServerOptions{
		Addr: addr, WebConfigFile: webConfig, Logger: logger, Top: top, Version: Version(), MaxRequests: maxRequests,
	})
	if err != nil {
		if errors.Is(err, metrics.ErrAddress) {
			return nil, nil, usageErrorf("--listen: %v", err)
		}
		return nil, nil, metrics.ListenHint(err)
	}
	where := "http://" + srv.Addr() + "/metrics"
	if srv.TLS() {
		where = "https://" + srv.Addr() + "/metrics (TLS and auth per " + webConfig + ")"
	} else if webConfig != "" {
		where += " (plain HTTP; auth per " + webConfig + ")"
	}
	fmt.Fprintf(io.ErrOut, "ctprof: serving metrics on %s\n", where)
	ch := make(chan error, 1)
	go func() { ch <- srv.Serve(ctx) }()
	return srv, ch, nil
}

// checkListen refuses a malformed --listen (a typo such as "abc") as a
// usage error before any work; a well-formed address that cannot be bound
// (a port in use) fails later, when it is bound, as a run failure.
func checkListen(addr string) error {
	if err := metrics.CheckAddr(addr); err != nil {
		return usageErrorf("--listen: %v", err)
	}
	return nil
}
