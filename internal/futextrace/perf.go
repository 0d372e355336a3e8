package futextrace

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// eventKind is which of a thread's perf events a fd is.
type eventKind int

const (
	evCount eventKind = iota // counts every blocking call; samples stacks every Nth when stacks are on
	evEnter                  // samples every blocking call's entry
	evExit                   // samples every futex(2) exit
)

// openEvent opens one tracepoint event on thread tid, disabled. group is
// the group leader's fd or -1. wakeup is the ring's watermark in bytes
// (for the ring's owner), or with everyRecord the reader is woken at each
// of this event's records.
func openEvent(tp uint64, tid, group int, sampleType, period uint64, regsMask uint64, stackSize uint32, wakeup uint32, everyRecord bool) (int, error) {
	attr := unix.PerfEventAttr{
		Type:        unix.PERF_TYPE_TRACEPOINT,
		Size:        uint32(unsafe.Sizeof(unix.PerfEventAttr{})),
		Config:      tp,
		Sample:      period,
		Sample_type: sampleType,
		// Disabled until the tracer enables it; the clock is CLOCK_MONOTONIC
		// so a record's time compares with ctprof's own.
		Bits:    unix.PerfBitDisabled | unix.PerfBitUseClockID,
		Clockid: unix.CLOCK_MONOTONIC,
	}
	if period == 0 {
		attr.Sample_type = 0
	}
	switch {
	case everyRecord:
		attr.Wakeup = 1
	case wakeup > 0:
		attr.Bits |= unix.PerfBitWatermark
		attr.Wakeup = wakeup
	}
	if sampleType&(1<<12) != 0 {
		attr.Sample_regs_user = regsMask
		attr.Sample_stack_user = stackSize
	}
	fd, err := unix.PerfEventOpen(&attr, tid, -1, group, unix.PERF_FLAG_FD_CLOEXEC)
	if err != nil {
		return -1, err
	}
	return fd, nil
}

func ioctl(fd int, req uint, arg uintptr) error {
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(req), arg)
	if e != 0 {
		return e
	}
	return nil
}

func setFilter(fd int, filter string) error {
	b := append([]byte(filter), 0)
	return ioctl(fd, unix.PERF_EVENT_IOC_SET_FILTER, uintptr(unsafe.Pointer(&b[0])))
}

func eventID(fd int) (uint64, error) {
	var id uint64
	err := ioctl(fd, unix.PERF_EVENT_IOC_ID, uintptr(unsafe.Pointer(&id)))
	return id, err
}

func readCount(fd int) (uint64, bool) {
	var b [8]byte
	n, err := unix.Read(fd, b[:])
	if err != nil || n != 8 {
		return 0, false
	}
	return binary.LittleEndian.Uint64(b[:]), true
}

// ring is a perf mmap ring: one metadata page and a power-of-two data
// area the kernel writes records into.
type ring struct {
	mem  []byte
	data []byte
	buf  []byte // a record that wraps around the end is copied here
}

func mapRing(fd int, dataPages int) (*ring, error) {
	page := unix.Getpagesize()
	mem, err := unix.Mmap(fd, 0, (1+dataPages)*page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mmap perf ring: %w", err)
	}
	return &ring{mem: mem, data: mem[page:]}, nil
}

func (r *ring) head() *uint64 { return (*uint64)(unsafe.Pointer(&r.mem[1024])) }
func (r *ring) tail() *uint64 { return (*uint64)(unsafe.Pointer(&r.mem[1032])) }

// drain calls f for every record between the tail and the head, then
// moves the tail. A record whose header is impossible (a size of 0 or
// larger than what is left) ends the drain: the rest is skipped and
// counted in bad.
func (r *ring) drain(f func(rec []byte)) (bad int) {
	head := atomic.LoadUint64(r.head()) // a load-acquire: the records before it are written
	tail := *r.tail()
	size := uint64(len(r.data))
	for tail < head {
		if head-tail < 8 {
			bad++
			break
		}
		off := tail % size
		var hdr [8]byte
		for i := range hdr {
			hdr[i] = r.data[(off+uint64(i))%size]
		}
		n := uint64(binary.LittleEndian.Uint16(hdr[6:]))
		if n < 8 || n > head-tail {
			bad++
			break
		}
		var rec []byte
		if off+n <= size {
			rec = r.data[off : off+n]
		} else {
			r.buf = append(r.buf[:0], r.data[off:]...)
			r.buf = append(r.buf, r.data[:n-(size-off)]...)
			rec = r.buf
		}
		f(rec)
		tail += n
	}
	atomic.StoreUint64(r.tail(), head)
	return bad
}

func (r *ring) unmap() {
	if r != nil && r.mem != nil {
		_ = unix.Munmap(r.mem)
		r.mem, r.data = nil, nil
	}
}
