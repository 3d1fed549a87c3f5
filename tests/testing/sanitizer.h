// Whether this test program runs under AddressSanitizer. Its allocator
// keeps freed memory in a quarantine (written, so resident) to catch uses
// after free: resident sizes then say nothing about what the code under
// test holds, and tests that measure them skip that part (LeakSanitizer
// checks leaks instead).
#ifndef RPCRDMA_TESTS_TESTING_SANITIZER_H_
#define RPCRDMA_TESTS_TESTING_SANITIZER_H_

namespace rpcrdma::test {

#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kUnderSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kUnderSanitizer = true;
#else
inline constexpr bool kUnderSanitizer = false;
#endif
#else
inline constexpr bool kUnderSanitizer = false;
#endif

}  // namespace rpcrdma::test

#endif  // RPCRDMA_TESTS_TESTING_SANITIZER_H_
