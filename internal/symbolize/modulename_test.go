package symbolize

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestModuleName(t *testing.T) {
	for _, c := range []struct{ path, want string }{
		{"/usr/lib/x86_64-linux-gnu/libc.so.6", "libc.so.6"},
		{"/usr/sbin/mariadbd", "mariadbd"},
		{"/usr/sbin/mariadbd (deleted)", "mariadbd"},
		{"/tmp/librocksdbjni6232283238053418444.so", "librocksdbjni*.so"},
		{"/tmp/librocksdbjni6232283238053418444.so (deleted)", "librocksdbjni*.so"},
		// The random digits follow "x86_64" with nothing between: the name
		// loses its 64, and stays the same at every start all the same.
		{"/tmp/libnetty_transport_native_epoll_x86_644827461712391929.so", "libnetty_transport_native_epoll_x86_*.so"},
		{"/tmp/sqlite-3.45.1.0-0c4e6b4e-8a61-4cf2-9d0e-3e4c2b9a7f10-libsqlitejdbc.so", "sqlite-3.45.1.0-*-libsqlitejdbc.so"},
		{"/opt/app/lib/libfoo-20261128.so", "libfoo-20261128.so"}, // a date is no random part
		{"/usr/lib/librocksdb.so.7.8.3", "librocksdb.so.7.8.3"},
	} {
		assert.Equal(t, c.want, moduleName(c.path), c.path)
	}
}
