package disk

// Access times, as Linux's touch_atime updates them for ext4: the VFS
// glue decides from the mount's policy whether an access may move atime
// (noatime, nodiratime, a read-only mount, O_NOATIME), and AtimeDue is
// the rest of atime_needs_update (relatime_need_update, and no write of
// the value atime has). TouchAtime writes the new atime through the
// journal, as ext4_dirty_inode does without lazytime.

import (
	"time"
)

// FlagNoatime is EXT4_NOATIME_FL (chattr +A): accesses leave atime alone
// (S_NOATIME).
const FlagNoatime = flNoatime

// relatimeDay is relatime_need_update's age, in seconds, past which atime
// moves anyway.
const relatimeDay = 24 * 60 * 60

// AtimeDue reports whether an access at now moves an inode's atime to
// now, given its atime, mtime and ctime (atime_needs_update past the
// mount's and the inode's flags): under relatime (relatime_need_update)
// only if atime is not after mtime or not after ctime, or is a day or
// more older than now in whole seconds; never when atime is now already.
// now is the time as the inode would store it (Inode.Stamp).
func AtimeDue(atime, mtime, ctime, now Timespec, relatime bool) bool {
	if relatime && after(atime, mtime) && after(atime, ctime) && now.Sec-atime.Sec < relatimeDay {
		return false
	}
	return atime != now
}

// after reports whether a is later than b.
func after(a, b Timespec) bool { return a.Sec > b.Sec || a.Sec == b.Sec && a.Nsec > b.Nsec }

// Stamp returns t as the inode stores a timestamp: nanoseconds only in an
// inode with room for the _extra words (s_time_gran is a second without
// them), seconds as the 34 bits of the encoding wrap them.
func (in *Inode) Stamp(t time.Time) Timespec {
	return stamp(in.fits(0x8C, 4), t)
}

func stamp(extra bool, t time.Time) Timespec {
	sec := t.Unix()
	if !extra {
		return Timespec{Sec: int64(int32(sec))}
	}
	lo := int64(int32(sec))
	epoch := (sec - lo) >> 32 & 3
	return Timespec{Sec: lo + epoch<<32, Nsec: int64(t.Nanosecond())}
}

// rawTime decodes timestamp k (tAtime...) of raw inode bytes.
func rawTime(raw []byte, k int) Timespec {
	o := timeOffs[k]
	ts := Timespec{Sec: int64(int32(le32(raw, o[0])))}
	if o[1]+4 <= extraEnd(raw) {
		x := le32(raw, o[1])
		ts.Sec += int64(x&3) << 32
		ts.Nsec = min(int64(x>>2), 999999999)
	}
	return ts
}

// TouchAtime sets inode ino's atime to now, in one transaction, if an
// access now moves it (AtimeDue with the inode's times as they are under
// the lock, relatime or strictatime) and the inode has no FlagNoatime.
// It reports whether it wrote.
//
// Errors: EROFS once the Writer is closed or failed; those of reading
// the inode (a freed one among them).
func (w *Writer) TouchAtime(ino uint32, now time.Time, relatime bool) (bool, error) {
	if err := w.lock(); err != nil {
		return false, err
	}
	defer w.unlock()
	raw, err := w.getInode(ino)
	if err != nil {
		return false, err
	}
	if iMode(raw) == 0 || iFlags(raw)&flNoatime != 0 {
		return false, nil
	}
	ts := stamp(timeOffs[tAtime][1]+4 <= extraEnd(raw), now)
	if !AtimeDue(rawTime(raw, tAtime), rawTime(raw, tMtime), rawTime(raw, tCtime), ts, relatime) {
		return false, nil
	}
	touch(raw, now, tAtime)
	return true, w.putInode(ino, raw)
}
