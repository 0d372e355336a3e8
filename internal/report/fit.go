package report

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/ctprof/ctprof/pkg/usl"
)

// FitDocument is the JSON form of a scalability fit (docs/usl.md).
type FitDocument struct {
	Points []FitPoint `json:"points"`
	// USL is null when it could not be fitted; USLError says why.
	USL      *FitParams `json:"usl"`
	USLError string     `json:"usl_error,omitempty"`
	Amdahl   *FitParams `json:"amdahl"`
	// AmdahlError says why Amdahl could not be fitted.
	AmdahlError string `json:"amdahl_error,omitempty"`
}

// FitPoint is a measurement with the models' values there.
type FitPoint struct {
	N          float64  `json:"n"`
	Throughput float64  `json:"throughput"`
	USL        *float64 `json:"usl,omitempty"`
	Amdahl     *float64 `json:"amdahl,omitempty"`
}

// FitParams are one model's parameters. Kappa and the peak are absent for
// Amdahl; MaxThroughput is absent when nothing limits throughput.
type FitParams struct {
	Sigma           float64  `json:"sigma"`
	Kappa           *float64 `json:"kappa,omitempty"`
	Lambda          float64  `json:"lambda"`
	PeakConcurrency *float64 `json:"peak_concurrency,omitempty"`
	MaxThroughput   *float64 `json:"max_throughput"`
	R2              float64  `json:"r2"`
	SigmaStdErr     *float64 `json:"sigma_stderr"`
	KappaStdErr     *float64 `json:"kappa_stderr,omitempty"`
	LambdaStdErr    *float64 `json:"lambda_stderr"`
	Bound           string   `json:"bound"`
	Warnings        []string `json:"warnings"`
}

// NewFitDocument builds the document from the fits (nil when failed).
func NewFitDocument(points []usl.Point, uslFit *usl.Fit, uslErr error, amdahl *usl.Fit, amdahlErr error) *FitDocument {
	doc := &FitDocument{Points: []FitPoint{}}
	for _, p := range points {
		fp := FitPoint{N: p.N, Throughput: p.Throughput}
		if uslFit != nil {
			v := uslFit.Throughput(p.N)
			fp.USL = &v
		}
		if amdahl != nil {
			v := amdahl.Throughput(p.N)
			fp.Amdahl = &v
		}
		doc.Points = append(doc.Points, fp)
	}
	if uslFit != nil {
		doc.USL = params(uslFit)
	} else if uslErr != nil {
		doc.USLError = uslErr.Error()
	}
	if amdahl != nil {
		doc.Amdahl = params(amdahl)
	} else if amdahlErr != nil {
		doc.AmdahlError = amdahlErr.Error()
	}
	return doc
}

func params(f *usl.Fit) *FitParams {
	p := &FitParams{Sigma: f.Sigma, Lambda: f.Lambda, R2: f.R2, SigmaStdErr: f.SigmaStdErr, LambdaStdErr: f.LambdaStdErr,
		PeakConcurrency: f.PeakConcurrency, Bound: f.Bound, Warnings: append([]string{}, f.Warnings...)}
	if f.Model == "usl" {
		k := f.Kappa
		p.Kappa = &k
		p.KappaStdErr = f.KappaStdErr
	}
	if !math.IsInf(f.MaxThroughput, 0) {
		m := f.MaxThroughput
		p.MaxThroughput = &m
	}
	return p
}

// FitText writes the fits in plain words with the measured-vs-fitted table.
func FitText(w io.Writer, doc *FitDocument) error {
	tw := &textWriter{w: w}
	if p := doc.USL; p != nil {
		tw.printf("USL:    σ = %s (contention: %.1f %% of the work is serialized), κ = %s (coherency), λ = %s per unit of concurrency\n",
			withErr(p.Sigma, p.SigmaStdErr, "%.4g"), 100*p.Sigma, withErr(*p.Kappa, p.KappaStdErr, "%.3g"), withErr(p.Lambda, p.LambdaStdErr, "%.4g"))
		tw.printf("        %s; R² = %.4f\n", limit(p), p.R2)
	} else {
		tw.printf("USL:    not fitted: %s\n", doc.USLError)
	}
	if p := doc.Amdahl; p != nil {
		tw.printf("Amdahl: σ = %s (%.1f %% of the work is serialized), λ = %s per unit of concurrency\n",
			withErr(p.Sigma, p.SigmaStdErr, "%.4g"), 100*p.Sigma, withErr(p.Lambda, p.LambdaStdErr, "%.4g"))
		tw.printf("        %s; R² = %.4f\n", limit(p), p.R2)
	} else {
		tw.printf("Amdahl: not fitted: %s\n", doc.AmdahlError)
	}
	var warns []string
	for _, p := range []*FitParams{doc.USL, doc.Amdahl} {
		if p != nil {
			warns = append(warns, p.Warnings...)
		}
	}
	if len(warns) > 0 {
		tw.printf("\nwarnings:\n")
		seen := map[string]bool{}
		for _, w := range warns {
			if !seen[w] {
				seen[w] = true
				tw.printf("  %s\n", w)
			}
		}
	}
	tw.printf("\n%10s  %12s  %12s  %12s\n", "N", "measured", "USL", "Amdahl")
	for _, p := range doc.Points {
		tw.printf("%10g  %12.6g  %12s  %12s\n", p.N, p.Throughput, optNum(p.USL), optNum(p.Amdahl))
	}
	return tw.err
}

func withErr(v float64, se *float64, format string) string {
	s := fmt.Sprintf(format, v)
	if se != nil {
		s += " ± " + fmt.Sprintf(format, *se)
	}
	return s
}

// limit says what bounds throughput. The peak (a USL with κ > 0) is a fact
// of the curve; which term to blame is the fit's Bound, the term whose cap
// alone would be lower, so the text never disagrees with the JSON "bound".
func limit(p *FitParams) string {
	var b strings.Builder
	if p.PeakConcurrency != nil && p.MaxThroughput != nil {
		fmt.Fprintf(&b, "throughput peaks at N* ≈ %.1f with X ≈ %s, then falls", *p.PeakConcurrency, groupDigits(*p.MaxThroughput))
		switch p.Bound {
		case usl.BoundCoherency:
			b.WriteString(": coherency bounds it")
		case usl.BoundContention:
			b.WriteString(": contention bounds it (σ alone would cap it lower than κ)")
		}
		return b.String()
	}
	switch p.Bound {
	case usl.BoundContention:
		if p.MaxThroughput != nil {
			return fmt.Sprintf("throughput levels off towards λ/σ ≈ %s: contention bounds it", groupDigits(*p.MaxThroughput))
		}
		return "contention bounds throughput"
	case usl.BoundCoherency:
		return "coherency bounds throughput"
	}
	return "nothing limits throughput in the measured range (linear)"
}

func optNum(v *float64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%.6g", *v)
}

// groupDigits renders 12341.7 as "12,342".
func groupDigits(v float64) string {
	s := fmt.Sprintf("%.0f", v)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
