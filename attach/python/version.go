package python

import (
	"fmt"
	"strconv"

	"github.com/hangdoc/hangdoc/internal/lazyre"
)

// Version is a CPython PY_VERSION_HEX: 0x030B02F0 is 3.11.2 final.
type Version uint64

func (v Version) Major() int { return int(v>>24) & 0xff }
func (v Version) Minor() int { return int(v>>16) & 0xff }
func (v Version) Micro() int { return int(v>>8) & 0xff }

// String is "3.11.2", with the release level when not final ("3.14.0b2").
func (v Version) String() string {
	s := fmt.Sprintf("%d.%d.%d", v.Major(), v.Minor(), v.Micro())
	level, serial := int(v>>4)&0xf, int(v)&0xf
	switch level {
	case 0xa:
		s += fmt.Sprintf("a%d", serial)
	case 0xb:
		s += fmt.Sprintf("b%d", serial)
	case 0xc:
		s += fmt.Sprintf("rc%d", serial)
	}
	return s
}

// MakeVersion builds a final release's hex version.
func MakeVersion(major, minor, micro int) Version {
	return Version(major<<24 | minor<<16 | micro<<8 | 0xf0)
}

// versionInName finds "3.11" in "python3.11", "libpython3.12.so.1.0",
// "libpython3.13d.so".
var versionInName = lazyre.New(`python(\d)\.(\d+)`)

// VersionFromName reads the major and minor version from an interpreter
// or libpython file name; ok is false when the name has none.
func VersionFromName(name string) (Version, bool) {
	m := versionInName.FindStringSubmatch(name)
	if m == nil {
		return 0, false
	}
	major, _ := strconv.Atoi(m[1])
	minor, _ := strconv.Atoi(m[2])
	return MakeVersion(major, minor, 0), true
}

// Supported says whether Read knows the layout of v's structures: 3.11
// and 3.12 by table, 3.13 and later through _Py_DebugOffsets.
func Supported(v Version) bool {
	return v.Major() == 3 && v.Minor() >= 11
}
