// LevelDB's own CPU for a GET and for a 10,000-record SCAN (an iterator's
// Seek and 10,000 Next()s), measured on the real library for get-scan.toml:
// user time only (getrusage RUSAGE_THREAD), the database warm in the page
// cache, so that neither I/O nor the kernel's copy (which the model times
// itself) is in it. Records as My-YCSB's (16-byte keys, 200-byte values of
// random letters, inserted in shuffled order; LevelDB's default options).
//
//   apt-get install libleveldb-dev
//   g++ -O2 -o /tmp/leveldb_cpu examples/cache_ext/leveldb_cpu.cc -lleveldb
//   /tmp/leveldb_cpu /tmp/ldb 1342177 load    # build the database, then measure
//   /tmp/leveldb_cpu /tmp/ldb 1342177         # measure again
//
// Pass 0 warms the page cache; pass 1 is the figure.
#include <leveldb/db.h>
#include <sys/resource.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>
#include <cstdint>
static double ut(){ rusage r; getrusage(RUSAGE_THREAD,&r); return r.ru_utime.tv_sec+r.ru_utime.tv_usec*1e-6; }
static double st(){ rusage r; getrusage(RUSAGE_THREAD,&r); return r.ru_stime.tv_sec+r.ru_stime.tv_usec*1e-6; }
static uint64_t fnv(uint64_t v){ uint64_t h=14695981039346656037ull; uint8_t*p=(uint8_t*)&v; for(int i=0;i<8;i++,p++){h*=1099511628211ull;h^=*p;} return h; }
int main(int argc,char**argv){
  long n=atol(argv[2]); const char*dir=argv[1]; bool load=argc>3&&!strcmp(argv[3],"load");
  leveldb::Options o; o.create_if_missing=true; leveldb::DB*db;
  if(!leveldb::DB::Open(o,dir,&db).ok()){fprintf(stderr,"open\n");return 1;}
  char k[32]; std::string v(199,'a'); unsigned seed=1;
  if(load){
    // My-YCSB's init: keys "%015ld" (key_size 16), 199 random lowercase letters, shuffled order.
    std::vector<long> ks(n); for(long i=0;i<n;i++)ks[i]=i;
    for(long i=n-1;i>0;i--){long j=rand_r(&seed)%(i+1); std::swap(ks[i],ks[j]);}
    leveldb::WriteOptions w;
    for(long i=0;i<n;i++){ for(auto&c:v)c='a'+rand_r(&seed)%26; snprintf(k,sizeof k,"%015ld",ks[i]); db->Put(w,k,v); }
    // no CompactRange: keep the levels a load leaves
  }
  std::string s; db->GetProperty("leveldb.stats",&s); printf("%s\n",s.c_str());
  leveldb::ReadOptions ro; std::string out;
  for(int pass=0;pass<2;pass++){ // pass 0 warms the page cache
    int G=200000; double u0=ut(),s0=st();
    for(int i=0;i<G;i++){ snprintf(k,sizeof k,"%015lu",(unsigned long)(fnv(rand_r(&seed))%n)); db->Get(ro,k,&out); }
    double gu=(ut()-u0)/G*1e6, gs=(st()-s0)/G*1e6;
    int S=300; long recs=0; u0=ut(); s0=st();
    for(int i=0;i<S;i++){ snprintf(k,sizeof k,"%015lu",(unsigned long)(fnv(rand_r(&seed))%n));
      leveldb::Iterator*it=db->NewIterator(ro); long c=0;
      for(it->Seek(k); it->Valid()&&c<10000; it->Next()){ leveldb::Slice a=it->key(), b=it->value(); (void)a;(void)b; c++; }
      recs+=c; delete it; }
    printf("pass %d: GET user %.2f us sys %.2f us; SCAN(%.0f recs) user %.1f us sys %.1f us\n",pass,gu,gs,(double)recs/S,(ut()-u0)/S*1e6,(st()-s0)/S*1e6);
  }
  delete db;
}
