package stacks

import "testing"

func TestDemangle(t *testing.T) {
	tests := []struct{ in, want string }{
		{"_ZNSt5mutex4lockEv", "std::mutex::lock()"},
		{"_Z6workeri", "worker(int)"},
		{"_ZZ4mainENKUlvE_clEv", "main::{lambda()#1}::operator()() const"},
		{"_ZNK2ns3FooIiE3barEi", "ns::Foo<int>::bar(int) const"},
		{"_Z3fooIiEvT_", "void foo<int>(int)"},
		{"_ZN1A1fEv.cold", "A::f() [clone .cold]"},
		{"_ZNSt5mutex4lockEv@plt", "std::mutex::lock()@plt"},
		{"_ZNKSt6vectorIiSaIiEE4sizeEv", "std::vector<int, std::allocator<int> >::size() const"},
		// Rust v0 and legacy; the legacy hash is dropped like rustfilt does.
		{"_RNvCs15kBYyAo9fc_7mycrate7example", "mycrate::example"},
		{"_RNvMNtCs1234_7mycrate3fooNtB2_3Bar3baz", "<mycrate::foo::Bar>::baz"},
		{"_ZN3std2rt10lang_start17h0123456789abcdefE", "std::rt::lang_start"},
		{"_ZN4core3ptr85drop_in_place$LT$std..rt..lang_start$LT$$LP$$RP$$GT$..$u7b$$u7b$closure$u7d$$u7d$$GT$17h56789abcdef01234E",
			"core::ptr::drop_in_place<std::rt::lang_start<()>::{{closure}}>"},
		// Not mangled, or not valid: unchanged.
		{"pthread_mutex_lock", "pthread_mutex_lock"},
		{"std::mutex::lock()", "std::mutex::lock()"},
		{"_Zgarbage", "_Zgarbage"},
		{"_R", "_R"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := Demangle(tt.in); got != tt.want {
			t.Errorf("Demangle(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestFuncBase(t *testing.T) {
	tests := []struct{ in, want string }{
		{"ns::Foo<int>::bar(int) const", "ns::Foo<int>::bar"},
		{"main::{lambda()#1}::operator()() const", "main::{lambda()#1}::operator()"},
		{"std::mutex::lock()", "std::mutex::lock"},
		{"worker(int)", "worker"},
		{"pthread_mutex_lock", "pthread_mutex_lock"},
		{"void foo<int>(int)", "foo<int>"},
		{"A::f() [clone .cold]", "A::f"},
		{"foo() [clone .constprop.0] [clone .isra.0]", "foo"},
		{"std::vector<int, std::allocator<int> >::size() const", "std::vector<int, std::allocator<int> >::size"},
		{"A::operator bool()", "A::operator bool"},
		{"A::operator<(A const&)", "A::operator<"},
		{"bool operator< <A>(A const&, A const&)", "operator< <A>"},
		{"operator new(unsigned long)", "operator new"},
		{"Foo::operator()", "Foo::operator()"},
		{"Foo::operator->() const &&", "Foo::operator->"},
		{"(anonymous namespace)::run(std::function<void ()> const&)", "(anonymous namespace)::run"},
		{"std::thread::_State_impl<std::thread::_Invoker<std::tuple<main::{lambda()#1}> > >::_M_run()",
			"std::thread::_State_impl<std::thread::_Invoker<std::tuple<main::{lambda()#1}> > >::_M_run"},
		{"unsigned long long get<unsigned long long>()", "get<unsigned long long>"},
		{"  spaced()  ", "spaced"},
		{"<mycrate::foo::Bar>::baz", "<mycrate::foo::Bar>::baz"},
		{"??", "??"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := FuncBase(tt.in); got != tt.want {
			t.Errorf("FuncBase(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
