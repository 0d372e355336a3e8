package analysis

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// FindingKey joins a finding with itself in another dump or run by its
// subject, whatever its numbers and wording; a finding without a subject
// (an older ctprof's JSON summary) by its sentence without numbers and
// addresses.
func TestFindingKey(t *testing.T) {
	a := Finding{Kind: FindingLockHotspot, Subject: "monitor CapacityFix$Catalog", Summary: "Up to 7 threads …"}
	b := Finding{Kind: FindingLockHotspot, Subject: "monitor CapacityFix$Catalog", Summary: "2 threads queue … (seen in 1 dump)"}
	assert.Equal(t, FindingKey(a), FindingKey(b))
	c := Finding{Kind: FindingLockHotspot, Subject: "monitor CapacityFix$Stats", Summary: "Up to 7 threads …"}
	assert.NotEqual(t, FindingKey(a), FindingKey(c))
	d := Finding{Kind: FindingSerialization, Subject: "monitor CapacityFix$Catalog"}
	assert.NotEqual(t, FindingKey(a), FindingKey(d), "another kind about the same lock")

	old1 := Finding{Kind: FindingLockHotspot, Summary: "Up to 7 threads queue on monitor X <0x00000000f0086a48> for 1.5 s."}
	old2 := Finding{Kind: FindingLockHotspot, Summary: "Up to 3 threads queue on monitor X <0x00000000f0086930> for 0.2 s."}
	assert.Equal(t, FindingKey(old1), FindingKey(old2))
	old3 := Finding{Kind: FindingLockHotspot, Summary: "Up to 3 threads queue on monitor Y <0x00000000f0086930> for 0.2 s."}
	assert.NotEqual(t, FindingKey(old1), FindingKey(old3))
	assert.NotEqual(t, FindingKey(a), FindingKey(Finding{Kind: FindingLockHotspot, Summary: "monitor CapacityFix$Catalog"}),
		"a subject is never taken for a sentence")
}
