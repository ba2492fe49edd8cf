#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| dataplane_fuzz::lldp::check(data));
