package metrics

import (
	"html/template"
	"net/http"
	"runtime"
	"sync"
)

// landingTemplate is the page at /: what this is, where the metrics are,
// and the targets being watched. html/template escapes every value (process
// names are the target's to choose); the page loads nothing from elsewhere.
// It is parsed on first use, not at every ctprof command's start.
var landingTemplate = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("landing").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>ctprof exporter</title>
<style>
body { font-family: sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; }
td, th { padding: 0.2em 1em; text-align: left; border-bottom: 1px solid #ddd; }
.down { color: #b00; }
</style>
</head>
<body>
<h1>ctprof exporter</h1>
<p>Thread and lock contention metrics for Prometheus. ctprof {{.Version}} ({{.GoVersion}}).</p>
<ul>
<li><a href="metrics">/metrics</a>: the metrics (documented in docs/prometheus.md)</li>
<li><a href="healthz">/healthz</a>: liveness</li>
</ul>
<h2>Targets</h2>
{{if .Targets}}<table>
<tr><th>pid</th><th>target</th><th>kind</th><th>state</th></tr>
{{range .Targets}}<tr><td>{{.PID}}</td><td>{{.Name}}</td><td>{{.Kind}}</td><td>{{if .Up}}sampling{{else}}<span class="down">down</span>{{end}}</td></tr>
{{end}}</table>{{else}}<p>No target yet.</p>{{end}}
</body>
</html>
`))
})

func (s *Server) landing(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/" {
		http.NotFound(w, r)
		return
	}
	targets := s.collector.Targets()
	for i := range targets {
		targets[i].Name = LabelValue(targets[i].Name)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	data := struct {
		Version, GoVersion string
		Targets            []TargetStatus
	}{s.collector.version, runtime.Version(), targets}
	if err := landingTemplate().Execute(w, data); err != nil {
		s.logger.Warn("landing page", "err", err)
	}
}
