package report

// pageHTML is the report's page. html/template escapes every value from
// the target for the context it lands in; the chart data arrives as one
// escaped JSON block (safeJSON). Element ids are stable so tests and
// golden structure checks can find each part.
const pageHTML = `{{template "head" .}}

<section id="findings">
  <h2>Findings</h2>
  {{- if not .S.Findings}}
  <p class="none">{{nofindings .S}}</p>
  {{- end}}
  {{- range .S.Findings}}
  {{template "finding" .}}
  {{- end}}
</section>

<section id="flame">
  <h2>Where the threads are</h2>
  {{- if .Flame}}
  {{template "flamecontrols" .FlameViews}}
  <p class="hint">Frames are as wide as the samples that passed through them, root at the top, coloured by package; a red border marks frames where most threads were blocked on a monitor. Click a frame to zoom in.</p>
  {{template "flamebox"}}
  {{- else}}
  <p class="none">No stacks: a JVM's come from its thread dumps, a native process's from the blocked threads' stacks read through /proc/&lt;pid&gt;/mem (which needs ptrace rights over it); this run had none.</p>
  {{- end}}
</section>

<section id="resources">
  <h2>What threads wait for</h2>
  {{- if .S.ContentionSites}}
  <p class="hint">A resource is a class waited for at the frame where the waiting code calls in, over all its instances: a convoy through a latch per waiter or a transaction object per holder is one queue here. The lock instances are below.</p>
  <table id="table-resources" class="sortable">
    <thead><tr><th>resource</th><th data-type="num">peak waiters</th><th data-type="num">avg waiters</th><th data-type="num">blocked share</th><th data-type="num">thread-seconds</th><th data-type="num">instances</th><th>who waits</th><th>what the holders do</th></tr></thead>
    <tbody>
    {{- range .S.ContentionSites}}
      <tr data-resource="{{.ID}}"><td class="name">{{.Class}}<br><small>{{.Kind}} at {{.WaitFrame}}</small></td>
      <td data-v="{{.Waiters}}">{{.Waiters}}</td><td data-v="{{.AvgWaiters}}">{{f2 .AvgWaiters}}</td><td data-v="{{.BlockedShare}}">{{pct .BlockedShare}}<br><small>in {{.DumpsSeen}} dump(s)</small></td><td data-v="{{.BlockedThreadSeconds}}">{{f1 .BlockedThreadSeconds}}</td>
      <td data-v="{{.Instances}}">{{.Instances}}<br><small>{{if eq .Instances 1}}one instance{{else if .Striped}}striped: one waiter each, each behind its own holder{{else}}one queue over {{.PeakInstances}} at once{{end}}</small></td>
      <td>{{if .Pool}}{{.PoolWaiting}} of {{.PoolThreads}} {{.Pool}}{{if .OthersRun}}<br><small>others work in {{(index .OthersRun 0).Frame}}</small>{{end}}{{end}}</td>
      <td>{{if .Holders}}{{if .Ownerless}}<small>nobody holds it; the thread they wait for</small><br>{{holderDoes (index .Holders 0).Frame false}}{{else}}{{holderDoes (index .Holders 0).Frame true}}{{end}}{{else if .Ownerless}}nobody holds it: they wait for a signal or a hand-off{{end}}</td></tr>
    {{- end}}
    </tbody>
  </table>
  {{- else}}
  <p class="none">No thread waited for another.</p>
  {{- end}}
</section>

<section id="locks">
  <h2>Lock instances</h2>
  {{- if .S.Locks}}
  <table id="table-locks" class="sortable">
    <thead><tr><th>lock</th><th>how threads wait</th><th data-type="num">peak waiters</th><th data-type="num">avg waiters</th><th data-type="num">blocked share</th><th data-type="num">thread-seconds queued</th><th>where threads wait</th><th>owner</th><th>what the owner runs</th></tr></thead>
    <tbody>
    {{- range .S.Locks}}
      <tr data-lock="{{.ID}}"><td class="name">{{lockname .}}{{if .Symbol}}<br><small>{{deref .Symbol}}</small>{{end}}<br><small>{{.Class}} {{.Address}}</small></td>
      <td>{{.Kind}}{{if gt (len .WaitKinds) 1}}<br><small>{{waitkinds .WaitKinds}}</small>{{end}}{{with .Exact}}<br><small>kernel counted {{.Waits}} waits, {{f1 .PerSecond}}/s, p99 {{.P99Ms}} ms</small>{{end}}{{with .FastReads}}<br><small>fast reads caught waiters in {{pct .Share}}</small>{{end}}</td>
      <td data-v="{{.Waiters}}">{{.Waiters}}</td><td data-v="{{.AvgWaiters}}">{{f2 .AvgWaiters}}</td><td data-v="{{.BlockedShare}}">{{pct .BlockedShare}}<br><small>in {{.DumpsSeen}} sample(s)</small></td><td data-v="{{.BlockedThreadSeconds}}">{{f1 .BlockedThreadSeconds}}</td>
      <td>{{range .WaitFrames}}{{.Frame}} <small>({{.Samples}})</small><br>{{else}}{{deref .WaitFrame}}{{end}}</td>
      <td>{{if .Owner}}{{deref .Owner}}{{else if .Releaser}}nobody holds it; {{deref .Releaser}} runs the same code without waiting{{end}}{{with .Holder}}{{if .TID}}<br><small>tid {{.TID}}, {{.Lock}}, named in {{.Samples}} sample(s)</small>{{end}}{{end}}</td>
      <td>{{range .OwnerFrames}}{{.Frame}} <small>({{.Samples}})</small><br>{{else}}{{if .Owner}}{{deref .OwnerFrame}}{{else}}{{deref .ReleaserFrame}}{{end}}{{end}}{{with .Holder}}{{if .Stack}}<small class="stack">stack: {{join .Stack " ← "}}</small>{{end}}{{end}}</td></tr>
    {{- end}}
    </tbody>
  </table>
  {{- else}}
  <p class="none">No thread waited on a lock.</p>
  {{- end}}
</section>

{{- if .WaitHists}}
<section id="jfr-waits">
  <h2>How long threads waited (JFR)</h2>
  <p class="hint">Every wait the JVM recorded on the hottest locks, by duration: a bar holds the waits up to its bound and above the previous one.</p>
  {{- range .WaitHists}}
  <div id="{{.ID}}" class="chart timeline" data-title="{{.Title}}"></div>
  {{- end}}
</section>
{{- end}}

{{- if .Timelines}}
<section id="timelines">
  <h2>Over time</h2>
  {{- range .Timelines}}
  <div id="chart-timeline-{{.ID}}" class="chart timeline" data-title="{{.Title}}"></div>
  {{- end}}
</section>
{{- end}}

<section id="pools">
  <h2>Thread pools</h2>
  <table id="table-pools" class="sortable">
    <thead><tr><th>pool (digits as N)</th><th data-type="num">threads</th><th>states</th>{{if .S.Target}}<th data-type="num">CPU %</th><th data-type="num">voluntary/s</th><th data-type="num">involuntary/s</th>{{end}}</tr></thead>
    <tbody>
    {{- range .S.Pools}}
      <tr><td class="name">{{.Name}}</td><td data-v="{{.Threads}}">{{.Threads}}</td><td>{{states .States}}</td>{{if $.S.Target}}<td data-v="{{.CPUPercent}}">{{f1 .CPUPercent}}</td><td data-v="{{.VoluntaryPerSecond}}">{{f1 .VoluntaryPerSecond}}</td><td data-v="{{.InvoluntaryPerSecond}}">{{f1 .InvoluntaryPerSecond}}</td>{{end}}</tr>
    {{- end}}
    </tbody>
  </table>
</section>

{{- if .S.ThreadCPU}}
<section id="threads">
  <h2>Busiest threads</h2>
  <table id="table-threads" class="sortable">
    <thead><tr><th>thread</th>{{if .S.Target}}<th data-type="num">OS tid</th><th>state</th>{{end}}<th data-type="num">CPU %</th>{{if .S.Target}}<th data-type="num">voluntary/s</th><th data-type="num">involuntary/s</th><th data-type="num">run-queue wait</th><th>policy, nice, CPUs</th>{{end}}</tr></thead>
    <tbody>
    {{- range .S.ThreadCPU}}
      <tr><td class="name">{{.Thread}}</td>{{if $.S.Target}}<td data-v="{{.TID}}">{{.TID}}</td><td>{{state .}}</td>{{end}}<td data-v="{{.Percent}}">{{f1 .Percent}}</td>{{if $.S.Target}}<td data-v="{{.VoluntaryPerSecond}}">{{f1 .VoluntaryPerSecond}}</td><td data-v="{{.InvoluntaryPerSecond}}">{{f1 .InvoluntaryPerSecond}}</td><td data-v="{{.RunQueueWaitShare}}">{{pct .RunQueueWaitShare}}</td><td>{{.Policy}}, {{.Nice}}, {{.CPUsAllowed}}</td>{{end}}</tr>
    {{- end}}
    </tbody>
  </table>
</section>
{{- end}}

{{- if .Deadlocks}}
<section id="deadlocks">
  <h2>Deadlocks</h2>
  <div id="chart-deadlocks" class="chart graph"></div>
  {{- range $d := .S.Deadlocks}}
  <ul class="deadlock">{{range $i, $t := $d.Threads}}<li><span class="name">{{$t}}</span> waits for {{with index $d.Locks $i}}{{.Kind}} {{.Class}} {{.Address}}{{end}}</li>{{end}}<li class="source">found by {{$d.Source}}, in {{$d.Dumps}} dump(s)</li></ul>
  {{- end}}
</section>
{{- end}}

{{- if .S.Warnings}}
<section id="warnings">
  <h2>Warnings</h2>
  <ul>{{range .S.Warnings}}<li>{{.}}</li>{{end}}</ul>
</section>
{{- end}}

{{template "tail" .}}`

// pageFrame holds the parts every ctprof page shares: the head with its
// Content-Security-Policy (no request may leave the page), the header of
// facts, the flame graph's controls and box (report.js drives them by
// these ids), and the data block and scripts at the end.
const pageFrame = `{{define "flamecontrols"}}<div class="controls">
    <label>View <select id="flame-view">
      {{- range .}}<option value="{{.ID}}">{{.Label}} ({{.Total}} {{if .Unit}}{{.Unit}}{{else}}samples{{end}})</option>{{end}}
    </select></label>
    <label>Search <input id="flame-search" type="search" placeholder="frame, class or package"></label>
    <button id="flame-reset" type="button">Reset zoom</button>
    <span id="flame-path" class="path"></span>
  </div>{{end}}{{define "flamebox"}}<div id="flame-box" class="flame-box"><div id="chart-flame" class="chart flame"></div></div>{{end}}{{define "finding"}}<div class="finding {{.Severity}}" data-kind="{{.Kind}}">
    <p class="summary"><span class="badge">{{.Severity}}</span> {{.Summary}}</p>
    {{- if .Evidence}}
    <ul class="evidence">{{range .Evidence}}<li>{{.}}</li>{{end}}</ul>
    {{- end}}
    <p class="next">Next: {{.NextStep}}</p>
  </div>{{end}}{{define "head"}}<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:">
<title>{{.Title}}</title>
<style>{{.Style}}</style>
</head>
<body>
<header id="header">
  <h1>{{.Title}}</h1>
  <table class="facts">
  {{- range .Facts}}
    <tr><th>{{index . 0}}</th><td>{{index . 1}}</td></tr>
  {{- end}}
  </table>
  {{- if .Generated}}<p class="generated">generated {{.Generated}}</p>{{end}}
</header>
{{end}}{{define "tail"}}<footer>ctprof: thread and lock contention profiler. Self-contained page: it loads nothing from the network.</footer>
<script type="application/json" id="ctprof-data">{{.Data}}</script>
<script>{{.ECharts}}</script>
<script>{{.Script}}</script>
</body>
</html>
{{end}}`
