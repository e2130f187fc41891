fn main() {
    let a: Vec<String> = std::env::args().collect();
    let t = std::time::Instant::now();
    let r = foliosim::reproduce::mmap_miss_cell(
        a[1].parse().unwrap(),
        &a[2],
        &a[3],
        foliosim::sim::LruKind::Classic,
        1,
    );
    println!("{:?} wall {:?}", r, t.elapsed());
}
