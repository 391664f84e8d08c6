//===- LsanSuppressions.cpp - LeakSanitizer suppressions of sanitizer builds -===//
//
// Linked into every test executable of a sanitizer build (tests/CMakeLists.txt).
// Khronos' validation layer 1.3.239 (Debian 12) leaks state of its
// synchronization validation (GRAFT_VK_VALIDATION=sync, the *_sync_validated
// tests): allocations made inside the layer and never freed by it. Only that
// library is suppressed; graft's own leaks still fail the tests.
//
//===----------------------------------------------------------------------===//

extern "C" const char *__lsan_default_suppressions() {
  return "leak:libVkLayer_khronos_validation.so\n";
}
