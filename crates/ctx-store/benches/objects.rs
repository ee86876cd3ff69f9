//! Object store write and read throughput.

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use ctx_store::Store;

fn bench_objects(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, _) = Store::init(&dir.path().join(".ctx")).expect("init");
    let objects = store.objects();
    let mut group = c.benchmark_group("objects");
    for size in [4 * 1024, 64 * 1024, 1024 * 1024] {
        group.throughput(Throughput::Bytes(size as u64));
        let mut payload = vec![b'x'; size];
        let mut counter = 0u64;
        group.bench_with_input(BenchmarkId::new("put_new", size), &size, |b, _| {
            b.iter(|| {
                // A fresh object every time: the full tmp + fsync + rename path.
                counter += 1;
                payload[..8].copy_from_slice(&counter.to_le_bytes());
                objects.put(black_box(&payload)).expect("put")
            });
        });
        let existing = objects.put(&payload).expect("put");
        group.bench_with_input(BenchmarkId::new("put_existing", size), &size, |b, _| {
            b.iter(|| objects.put(black_box(&payload)).expect("put"));
        });
        group.bench_with_input(BenchmarkId::new("get_verified", size), &size, |b, _| {
            b.iter(|| objects.get(black_box(&existing)).expect("get"));
        });
    }
    group.finish();
}

criterion_group!(benches, bench_objects);
criterion_main!(benches);
