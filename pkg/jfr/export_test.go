package jfr

// SetMetadataCache turns the process-wide metadata cache on or off, so a
// benchmark can measure reading recordings of a JVM seen for the first time.
func SetMetadataCache(on bool) {
	metaCache.Lock()
	defer metaCache.Unlock()
	metaCache.disabled = !on
	metaCache.entries = nil
}
