package attach

import (
	"os"
	"regexp"
	"testing"
)

// TestRuntimeSeam: the sampler, Attach and Core reach Go, CPython and
// the JVM only through the runtime seam (runtime.go): none of their
// readers, nor the packages that read them, is named there. A new
// runtime is a langRuntime in runtimes, not a branch in these files.
func TestRuntimeSeam(t *testing.T) {
	named := regexp.MustCompile(`\b(goTarget|pyTarget|jvmReader|goRuntime|pythonRuntime|jvmRuntime|readJVM|isJVM|findInterpreter|goproc|python)\b`)
	for _, f := range []string{"sample.go", "attach.go", "corefile.go"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if m := named.Find(b); m != nil {
			t.Errorf("%s names %s: go through the runtime seam (runtime.go)", f, m)
		}
	}
	if len(runtimes) != 3 {
		t.Errorf("%d runtimes, want Go, CPython and the JVM", len(runtimes))
	}
}
