/* seed 000's fio job (ioengine=mmap, 4K every 64K, time_based) as a tiny
 * static program for a QEMU guest; reports memcg refaults between
 * WARM and WARM+MEASURE seconds, like the seed's script. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
static long stat_get(const char *path,const char *key){FILE*f=fopen(path,"r");char k[128];long v;long r=-1;if(!f)return -1;while(fscanf(f,"%127s %ld",k,&v)==2){if(!strcmp(k,key)){r=v;break;}}fclose(f);return r;}
int main(int argc,char**argv){
  if(argc<6){fprintf(stderr,"usage: strided FILE WARM_S MEASURE_S MEMSTAT STRIDE_KB\n");return 2;}
  const char*file=argv[1];double warm=atof(argv[2]),meas=atof(argv[3]);const char*ms=argv[4];long stride=atol(argv[5])*1024;
  int fd=open(file,O_RDONLY);if(fd<0){perror("open");return 1;}
  struct stat st;fstat(fd,&st);size_t size=st.st_size;
  char*p=mmap(NULL,size,PROT_READ,MAP_SHARED,fd,0);if(p==MAP_FAILED){perror("mmap");return 1;}
  static char buf[4096];unsigned long long n=0,n_at_warm=0;size_t off=0;
  double t0=now(),t=t0;long r0=0,m0=0;int warmed=0;volatile unsigned sink=0;
  for(;;){
    memcpy(buf,p+off,4096);sink+=buf[0];n++;off+=stride;if(off+4096>size)off=0;
    if((n&63)==0){t=now();
      if(!warmed&&t-t0>=warm){warmed=1;n_at_warm=n;r0=stat_get(ms,"workingset_refault_file");m0=stat_get(ms,"pgmajfault");}
      if(warmed&&t-t0>=warm+meas)break;}
  }
  long r1=stat_get(ms,"workingset_refault_file"),m1=stat_get(ms,"pgmajfault");
  double total=t-t0;
  printf("RESULT refaults=%ld majfault=%ld bw_total_mib_s=%.1f bw_window_mib_s=%.1f reads=%llu secs=%.1f\n",
    r1-r0,m1-m0,n*4096.0/1048576/total,(n-n_at_warm)*4096.0/1048576/meas,n,total);
  return 0;}
