// A YCSB-style driver over LevelDB (Debian's libleveldb-dev), the
// project's own: the cache_ext paper's "YCSB C / Uniform on LevelDB".
//
//   leveldb_ycsb load DIR RECORDS         insert RECORDS 1 KB records
//   leveldb_ycsb run DIR RECORDS OPS DIST read OPS records, DIST zipfian
//                                         (YCSB C: theta 0.99, scrambled)
//                                         or uniform
//
// Keys and values follow YCSB's CoreWorkload defaults: "user" followed by
// the FNV-1a 64 hash of the record number (insertorder=hashed), ten
// 100-byte fields (1,000 bytes). The generators are seeded: a run is the
// same sequence of keys every time.
#include <leveldb/db.h>
#include <leveldb/options.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

static uint64_t fnv64(uint64_t v) {
    uint64_t h = 0xCBF29CE484222325ULL;
    for (int i = 0; i < 8; i++) {
        h ^= v & 0xff;
        h *= 1099511628211ULL;
        v >>= 8;
    }
    return h;
}

static std::string key_of(uint64_t n) {
    char b[32];
    snprintf(b, sizeof b, "user%llu", (unsigned long long)fnv64(n));
    return b;
}

// splitmix64: a seeded, portable stream.
struct Rng {
    uint64_t s;
    uint64_t next() {
        uint64_t z = (s += 0x9E3779B97F4A7C15ULL);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
        return z ^ (z >> 31);
    }
    double unit() { return (next() >> 11) * (1.0 / 9007199254740992.0); }
};

// YCSB's ZipfianGenerator (Gray et al., "Quickly generating billion-record
// synthetic databases"), theta 0.99, over [0, n).
struct Zipf {
    uint64_t n;
    double theta, alpha, zetan, eta;
    explicit Zipf(uint64_t items) : n(items), theta(0.99) {
        double zeta2 = 1 + std::pow(0.5, theta);
        zetan = 0;
        for (uint64_t i = 1; i <= n; i++) zetan += 1 / std::pow((double)i, theta);
        alpha = 1 / (1 - theta);
        eta = (1 - std::pow(2.0 / n, 1 - theta)) / (1 - zeta2 / zetan);
    }
    uint64_t next(Rng& r) {
        double u = r.unit(), uz = u * zetan;
        if (uz < 1) return 0;
        if (uz < 1 + std::pow(0.5, theta)) return 1;
        return (uint64_t)(n * std::pow(eta * u - eta + 1, alpha)) % n;
    }
};

static leveldb::DB* open_db(const char* dir, bool create) {
    leveldb::Options o;
    o.create_if_missing = create;
    leveldb::DB* db = nullptr;
    leveldb::Status s = leveldb::DB::Open(o, dir, &db);
    if (!s.ok()) {
        fprintf(stderr, "leveldb_ycsb: %s: %s\n", dir, s.ToString().c_str());
        exit(1);
    }
    return db;
}

int main(int argc, char** argv) {
    if (argc >= 4 && !strcmp(argv[1], "load")) {
        uint64_t records = strtoull(argv[3], nullptr, 10);
        leveldb::DB* db = open_db(argv[2], true);
        std::string value(1000, 'v');
        Rng r{42};
        for (uint64_t i = 0; i < records; i++) {
            for (size_t j = 0; j < value.size(); j += 8) value[j] = 'a' + r.next() % 26;
            leveldb::Status s = db->Put(leveldb::WriteOptions(), key_of(i), value);
            if (!s.ok()) {
                fprintf(stderr, "leveldb_ycsb: put: %s\n", s.ToString().c_str());
                return 1;
            }
        }
        db->CompactRange(nullptr, nullptr);
        delete db;
        return 0;
    }
    if (argc >= 6 && !strcmp(argv[1], "run")) {
        uint64_t records = strtoull(argv[3], nullptr, 10);
        uint64_t ops = strtoull(argv[4], nullptr, 10);
        bool zipf = !strcmp(argv[5], "zipfian");
        if (!zipf && strcmp(argv[5], "uniform")) {
            fprintf(stderr, "leveldb_ycsb: distribution '%s': zipfian or uniform\n", argv[5]);
            return 2;
        }
        leveldb::DB* db = open_db(argv[2], false);
        Zipf z(zipf ? records : 1);
        Rng r{7};
        uint64_t found = 0;
        std::string v;
        for (uint64_t i = 0; i < ops; i++) {
            // Scrambled zipfian: the popular items spread over the key space.
            uint64_t item = zipf ? fnv64(z.next(r)) % records : r.next() % records;
            if (db->Get(leveldb::ReadOptions(), key_of(item), &v).ok()) found++;
        }
        delete db;
        printf("%llu of %llu found\n", (unsigned long long)found, (unsigned long long)ops);
        return found == ops ? 0 : 1;
    }
    fprintf(stderr, "usage: leveldb_ycsb load DIR RECORDS | run DIR RECORDS OPS zipfian|uniform\n");
    return 2;
}
