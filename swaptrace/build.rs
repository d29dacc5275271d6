//! With the `live` feature, builds the eBPF object from `swaptrace-ebpf`
//! (needs the nightly toolchain with rust-src and bpf-linker: `cargo xtask setup`).

fn main() -> anyhow::Result<()> {
    #[cfg(feature = "live")]
    {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../swaptrace-ebpf");
        aya_build::build_ebpf(
            [aya_build::Package {
                name: "swaptrace-ebpf",
                root_dir: dir,
                ..Default::default()
            }],
            aya_build::Toolchain::default(),
        )?;
    }
    Ok(())
}
