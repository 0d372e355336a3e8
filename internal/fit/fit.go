// Package fit is what `ctprof fit` does between its flags and its output:
// it reads measurements in ctprof's line format, fits both models through
// pkg/usl and gathers the document the text, JSON and HTML writers take.
// The format and the document are ctprof's own, so they live here rather
// than in pkg/usl, which stays a library for anyone's points.
package fit

import (
	"encoding/json"
	"io"

	"github.com/ctprof/ctprof/internal/report"
	"github.com/ctprof/ctprof/pkg/usl"
)

// Report is everything `ctprof fit` knows about one set of points: the
// fits as the report package renders them (points, usl, amdahl and their
// errors), the fits themselves, and every warning. Writers take it whole.
type Report struct {
	*report.FitDocument
	// Warnings gathers both models' warnings, each prefixed with its
	// model, and why a model could not be fitted.
	Warnings []string `json:"warnings"`
	// USL and Amdahl are the fits; nil when a model could not be fitted.
	USLFit    *usl.Fit `json:"-"`
	AmdahlFit *usl.Fit `json:"-"`
}

// NewReport fits both models. It fails only when neither can be fitted
// (the USL needs 4 distinct concurrencies, Amdahl 2).
func NewReport(points []usl.Point) (*Report, error) {
	u, uerr := usl.FitUSL(points)
	a, aerr := usl.FitAmdahl(points)
	if uerr != nil && aerr != nil {
		return nil, aerr
	}
	res := &Report{
		FitDocument: report.NewFitDocument(points, u, uerr, a, aerr),
		Warnings:    []string{},
		USLFit:      u,
		AmdahlFit:   a,
	}
	if uerr != nil {
		res.Warnings = append(res.Warnings, "USL not fitted: "+uerr.Error())
	} else {
		for _, w := range u.Warnings {
			res.Warnings = append(res.Warnings, "USL: "+w)
		}
	}
	if aerr != nil {
		res.Warnings = append(res.Warnings, "Amdahl not fitted: "+aerr.Error())
	} else {
		for _, w := range a.Warnings {
			res.Warnings = append(res.Warnings, "Amdahl: "+w)
		}
	}
	return res, nil
}

// WriteReport writes res as indented JSON (format "json") or as the fit's
// text (any other format; the command has checked the flag).
func WriteReport(w io.Writer, format string, res *Report) error {
	if format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	return report.FitText(w, res.FitDocument)
}
