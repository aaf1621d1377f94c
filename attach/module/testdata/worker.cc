// C++ names for the demangling path through module symbols.
#include <mutex>

namespace ns {
template <typename T> struct Foo {
	__attribute__((noinline)) int bar(int x) const { return x + sizeof(T); }
};
} // namespace ns

std::mutex mu;

__attribute__((noinline)) int worker(int x)
{
	std::lock_guard<std::mutex> g(mu);
	return ns::Foo<int>().bar(x);
}

int main(int argc, char **)
{
	auto f = [argc]() { return worker(argc); };
	return f();
}
