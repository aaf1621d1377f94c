package stacks

import "strings"

// FuncKey reduces a function name to the spelling every comparison of
// frames uses (the vocabulary, the heuristics, attach's lock reader): no
// parameters, no symbol version, no GCC clone suffix, no legacy Rust hash,
// no glibc alias prefix and no leading underscores, so
// "__GI___pthread_mutex_lock", "___pthread_mutex_lock",
// "pthread_mutex_lock@@GLIBC_2.2.5" and "pthread_mutex_lock.part.0" all
// read "pthread_mutex_lock". Symbols, gdb and pasted dumps spell them
// apart; this is the one place that makes them agree.
func FuncKey(name string) string {
	if plainIdent(name) {
		// the common C name: nothing below but the prefixes applies
		// (FuncBase keeps an identifier whole), and a detector asks
		// for the key of every frame of every thread
		return strings.TrimLeft(strings.TrimPrefix(name, "__GI_"), "_")
	}
	return funcKey(name)
}

// funcKey is FuncKey for any spelling.
func funcKey(name string) string {
	if i := strings.IndexByte(name, '@'); i > 0 {
		name = name[:i]
	}
	name = FuncBase(name)
	for _, clone := range []string{".isra", ".part", ".constprop", ".cold", ".lto_priv", ".localalias", ".llvm."} {
		if i := strings.Index(name, clone); i > 0 {
			name = name[:i]
		}
	}
	name = trimRustHash(name)
	name = strings.TrimPrefix(name, "__GI_")
	return strings.TrimLeft(name, "_")
}

// plainIdent: name is only letters, digits and underscores.
func plainIdent(name string) bool {
	for i := 0; i < len(name); i++ {
		if c := name[i]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return name != ""
}

// CallName is FuncKey without the decorations glibc puts on its system
// call wrappers (__libc_read, __read_nocancel, __clock_nanosleep_time64):
// the name of the call itself, as attach's syscall table spells it.
func CallName(name string) string {
	s := FuncKey(name)
	for {
		t := strings.TrimLeft(strings.TrimPrefix(s, "libc_"), "_")
		if t == s {
			break
		}
		s = t
	}
	s = strings.TrimSuffix(s, "_time64")
	return strings.TrimSuffix(s, "_nocancel")
}

// trimRustHash drops the "::h0123456789abcdef" a legacy Rust symbol ends
// with when a dump printed it mangled-then-demangled without rustfilt.
func trimRustHash(s string) string {
	i := strings.LastIndex(s, "::h")
	if i < 0 || len(s)-i-3 != 16 {
		return s
	}
	for _, c := range s[i+3:] {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return s
		}
	}
	return s[:i]
}
