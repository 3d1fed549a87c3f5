// The unit that builds the precompiled header every GoogleTest program
// reuses (cmake/TestBuild.cmake); it has no code of its own.
