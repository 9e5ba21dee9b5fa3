#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    strata_fuzz::dispatch::run("manifest", strata_fuzz::scratch(), data);
});
