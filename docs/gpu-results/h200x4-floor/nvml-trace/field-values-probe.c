/* A probe of one session (not part of the tool; built with cc -O2 -ldl on
 * the GPU machine): GPU 0's NVLink error counters by 72 single
 * nvmlDeviceGetNvLinkErrorCounter queries against nvmlDeviceGetFieldValues
 * with fields 161-163 (NVML_FI_DEV_NVLINK_ERROR_DL_REPLAY, _RECOVERY, _CRC)
 * and scopeId = link, timed, three times. Output: field-values-probe.txt. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
typedef struct { unsigned fieldId, scopeId; long long ts, lat; int vt, rc; union { double d; unsigned long long ull; unsigned ui; } v; } FV;
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e3+t.tv_nsec/1e6;}
int main(void){
 void*h=dlopen("libnvidia-ml.so.1",RTLD_NOW);
 int(*init)(void)=dlsym(h,"nvmlInit_v2");
 int(*byidx)(unsigned,void**)=dlsym(h,"nvmlDeviceGetHandleByIndex_v2");
 int(*err)(void*,unsigned,int,unsigned long long*)=dlsym(h,"nvmlDeviceGetNvLinkErrorCounter");
 int(*fv)(void*,int,FV*)=dlsym(h,"nvmlDeviceGetFieldValues");
 void*d; init(); byidx(0,&d);
 for(int rep=0;rep<3;rep++){
  unsigned long long a[18][4]; int arc[18][4]; double t0=now();
  for(int l=0;l<18;l++)for(int c=0;c<4;c++){arc[l][c]=err(d,l,c,&a[l][c]);}
  double t1=now();
  FV f[54]; memset(f,0,sizeof f);
  for(int l=0;l<18;l++)for(int k=0;k<3;k++){f[l*3+k].fieldId=161+k;f[l*3+k].scopeId=l;}
  int rc=fv(d,54,f); double t2=now();
  FV g[18]; memset(g,0,sizeof g);
  for(int l=0;l<18;l++){g[l].fieldId=163;g[l].scopeId=l;}
  int rc3=fv(d,18,g); double t3=now();
  printf("rep %d: 72 single %.2f ms; fields(54) rc %d %.2f ms; fields(18 crc) rc %d %.2f ms\n",rep,t1-t0,rc,t2-t1,rc3,t3-t2);
  if(rep==0) for(int l=0;l<18;l++){
    printf(" L%-2d single replay %llu(%d) recov %llu(%d) flit %llu(%d) data %llu(%d) | fv replay %llu(%d,vt%d) recov %llu(%d) crc %llu(%d) lat %lld\n",l,
     a[l][0],arc[l][0],a[l][1],arc[l][1],a[l][2],arc[l][2],a[l][3],arc[l][3],
     f[l*3].v.ull,f[l*3].rc,f[l*3].vt,f[l*3+1].v.ull,f[l*3+1].rc,f[l*3+2].v.ull,f[l*3+2].rc,f[l*3].lat);}
 }
 return 0;}
