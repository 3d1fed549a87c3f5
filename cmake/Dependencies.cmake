# Every dependency comes from a Debian package; scripts/install-deps.sh
# installs them.
find_package(absl REQUIRED)
find_package(GTest REQUIRED)
find_package(benchmark REQUIRED)
find_package(Protobuf REQUIRED)
find_package(nlohmann_json REQUIRED)
find_package(PkgConfig REQUIRED)
pkg_check_modules(PCAP REQUIRED IMPORTED_TARGET libpcap)
pkg_check_modules(IBVERBS REQUIRED IMPORTED_TARGET libibverbs)
pkg_check_modules(RDMACM REQUIRED IMPORTED_TARGET librdmacm)

find_program(TSHARK_EXECUTABLE tshark)
