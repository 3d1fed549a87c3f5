# Soft-RoCE test VM. interop/vm/run-in-vm.sh boots Debian's kernel under
# qemu with a Soft-RoCE device (rxe0 on dummy0, 192.0.2.1) and runs one
# command in it; see interop/vm/README.md and the comment at the top of
# run-in-vm.sh. Tests that need it carry the ctest label `vm` unless they
# set their own LABELS. The first run downloads the kernel and busybox
# Debian packages into RPCRDMA_VM_CACHE (about 70 MB); later runs reuse
# them. Defined here, before any subdirectory, so that every directory can
# register VM tests. The cache lies outside every build tree and checkout
# (beside ccache's, under the user's cache directory), so that each build
# of each clone reuses one download; prepare-image.sh locks it, and
# rebuilds the small initramfs from the running checkout at every boot.

if(DEFINED ENV{XDG_CACHE_HOME} AND NOT "$ENV{XDG_CACHE_HOME}" STREQUAL "")
  set(rpcrdma_user_cache "$ENV{XDG_CACHE_HOME}")
elseif(DEFINED ENV{HOME} AND NOT "$ENV{HOME}" STREQUAL "")
  set(rpcrdma_user_cache "$ENV{HOME}/.cache")
else()
  set(rpcrdma_user_cache "${CMAKE_BINARY_DIR}")
endif()
set(RPCRDMA_VM_CACHE "${rpcrdma_user_cache}/rpcrdma/vm-cache"
    CACHE PATH "Where the VM harness keeps Debian packages and its boot image")
set(RPCRDMA_VM_TIMEOUT 300
    CACHE STRING "Seconds a VM test may run before run-in-vm.sh stops it")
set(RPCRDMA_VM_DIR "${CMAKE_CURRENT_LIST_DIR}/../interop/vm")
# The capture of a version-two session over rdma:// that api.verbs writes
# (fixture v2_vm_capture) and the version-two oracles read
# (interop/xdr_v2, interop/wireshark).
set(RPCRDMA_V2_VM_CAPTURE
    "${CMAKE_BINARY_DIR}/tests/api/api.verbs.vm/v2-live.pcap")
cmake_path(NORMAL_PATH RPCRDMA_VM_DIR)

# rpcrdma_add_vm_test(NAME <name> [SERVICES <svc>...] [RO <dir>...]
#                     [ENV <NAME=VALUE>...] [LABELS <label>...]
#                     COMMAND <command> [<arg>...])
# A ctest that runs COMMAND inside the Soft-RoCE VM. The source and build
# trees are visible in the VM at their own paths, so COMMAND may name
# $<TARGET_FILE:...> and scripts in the source tree. The read-write share,
# with the logs, is <current binary dir>/<name>.vm.
# SERVICES: kernel services to start first (nfsd: NFSv4 only; nfsd3: NFS
# versions 3 and 4 with rpc.mountd; see interop/vm/README.md).
# LABELS: the test's ctest labels, instead of the default `vm` (list `vm`
# too to keep it).
# MEMORY: the guest's memory in MiB (run-in-vm.sh's default otherwise);
# TIMEOUT: seconds the guest may run (RPCRDMA_VM_TIMEOUT otherwise).
function(rpcrdma_add_vm_test)
  cmake_parse_arguments(V "" "NAME;MEMORY;TIMEOUT"
                        "SERVICES;RO;ENV;LABELS;COMMAND" ${ARGN})
  if("LABELS" IN_LIST V_KEYWORDS_MISSING_VALUES)
    message(FATAL_ERROR "rpcrdma_add_vm_test(${V_NAME}): LABELS without a label")
  endif()
  if(NOT V_LABELS)
    set(V_LABELS vm)
  endif()
  if(NOT V_TIMEOUT)
    set(V_TIMEOUT ${RPCRDMA_VM_TIMEOUT})
  endif()
  set(args --cache ${RPCRDMA_VM_CACHE} --timeout ${V_TIMEOUT}
           --share ${CMAKE_CURRENT_BINARY_DIR}/${V_NAME}.vm
           --ro ${CMAKE_SOURCE_DIR} --ro ${CMAKE_BINARY_DIR})
  if(V_MEMORY)
    list(APPEND args --memory ${V_MEMORY})
  endif()
  foreach(dir IN LISTS V_RO)
    list(APPEND args --ro ${dir})
  endforeach()
  foreach(env IN LISTS V_ENV)
    list(APPEND args --env ${env})
  endforeach()
  if(V_SERVICES)
    list(JOIN V_SERVICES "," services)
    list(APPEND args --services ${services})
  endif()
  add_test(NAME ${V_NAME}
           COMMAND bash ${RPCRDMA_VM_DIR}/run-in-vm.sh ${args} -- ${V_COMMAND})
  # The VM keeps both CPUs of a 2-core machine busy; a cold first run also
  # downloads and unpacks the kernel.
  math(EXPR ctest_timeout "${V_TIMEOUT} + 300")
  set_tests_properties(${V_NAME} PROPERTIES LABELS "${V_LABELS}"
                                            TIMEOUT ${ctest_timeout}
                                            PROCESSORS 2)
endfunction()
