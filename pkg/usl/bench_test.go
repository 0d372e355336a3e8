package usl

import "testing"

// BenchmarkFitUSL fits the 32-point benchmark data set.
func BenchmarkFitUSL(b *testing.B) {
	pts := readCSV(b, "testdata/benchmark32.csv")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := FitUSL(pts); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFitAmdahl fits Amdahl's law to the same points.
func BenchmarkFitAmdahl(b *testing.B) {
	pts := readCSV(b, "testdata/benchmark32.csv")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := FitAmdahl(pts); err != nil {
			b.Fatal(err)
		}
	}
}
