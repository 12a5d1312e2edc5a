/* The C limit for bench/launch_overhead.py: the same kernel launches as the
 * Python paths, made directly against the system's OpenCL ICD loader.
 *
 *   launch_loop KERNEL.cl PLATFORM DEVICE MODE LAUNCHES REPEATS [N]
 *
 * MODE is one of
 *   event    clSetKernelArg x3 + clEnqueueNDRangeKernel with an event
 *            (released at once), as PyOpenCL does
 *   noevent  the same without an event
 *   create   clCreateKernel + the above + clReleaseKernel, every launch
 *   sort     bitonic sort of N random ints with the swap-pairs kernel;
 *            LAUNCHES is ignored, the result is checked
 *
 * Prints the best time of REPEATS runs, each ending with clFinish: microseconds
 * per launch (or per sort, for MODE sort).  Exit status 1 on any error.
 */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHECK(call)                                                        \
  do {                                                                     \
    cl_int err_ = (call);                                                  \
    if (err_ != CL_SUCCESS) {                                              \
      fprintf(stderr, "%s failed: %d (line %d)\n", #call, err_, __LINE__); \
      exit(1);                                                             \
    }                                                                      \
  } while (0)

static double now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static char *read_file(const char *path)
{
  FILE *f = fopen(path, "rb");
  if (!f) { perror(path); exit(1); }
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = malloc(size + 1);
  if (fread(buf, 1, size, f) != (size_t) size) { perror(path); exit(1); }
  buf[size] = 0;
  fclose(f);
  return buf;
}

static cl_kernel g_kernel;
static cl_program g_program;
static cl_command_queue g_queue;

static void launch(cl_kernel knl, cl_mem buf, cl_int x, cl_int n, size_t gsize,
                   int with_event)
{
  cl_event evt;
  CHECK(clSetKernelArg(knl, 0, sizeof(cl_mem), &buf));
  CHECK(clSetKernelArg(knl, 1, sizeof(cl_int), &x));
  CHECK(clSetKernelArg(knl, 2, sizeof(cl_int), &n));
  CHECK(clEnqueueNDRangeKernel(g_queue, knl, 1, NULL, &gsize, NULL, 0, NULL,
                               with_event ? &evt : NULL));
  if (with_event)
    CHECK(clReleaseEvent(evt));
}

static void sort(cl_mem buf, cl_int n)
{
  for (cl_int k = 2; k <= n; k <<= 1) {
    launch(g_kernel, buf, k - 1, n, n, 1);
    for (cl_int j = k >> 1; j > 0; j >>= 1)
      launch(g_kernel, buf, j, n, n, 1);
  }
}

static int cmp_int(const void *a, const void *b)
{
  int x = *(const int *) a, y = *(const int *) b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
  if (argc < 7) {
    fprintf(stderr, "usage: %s KERNEL.cl PLATFORM DEVICE MODE LAUNCHES REPEATS [N]\n",
            argv[0]);
    return 2;
  }
  const char *mode = argv[4];
  long launches = atol(argv[5]);
  int repeats = atoi(argv[6]);
  cl_int n = argc > 7 ? atoi(argv[7]) : 64;

  cl_platform_id platforms[16];
  cl_uint nplat;
  CHECK(clGetPlatformIDs(16, platforms, &nplat));
  cl_uint iplat = atoi(argv[2]), idev = atoi(argv[3]);
  if (iplat >= nplat) { fprintf(stderr, "no platform %u\n", iplat); return 1; }
  cl_device_id devices[16];
  cl_uint ndev;
  CHECK(clGetDeviceIDs(platforms[iplat], CL_DEVICE_TYPE_ALL, 16, devices, &ndev));
  if (idev >= ndev) { fprintf(stderr, "no device %u\n", idev); return 1; }
  cl_device_id dev = devices[idev];

  cl_int err;
  cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
  CHECK(err);
  g_queue = clCreateCommandQueue(ctx, dev, 0, &err);
  CHECK(err);
  const char *src = read_file(argv[1]);
  g_program = clCreateProgramWithSource(ctx, 1, &src, NULL, &err);
  CHECK(err);
  CHECK(clBuildProgram(g_program, 1, &dev, "", NULL, NULL));
  g_kernel = clCreateKernel(g_program, "swap_pairs_kernel", &err);
  CHECK(err);

  int *host = malloc(sizeof(int) * n), *sorted = malloc(sizeof(int) * n);
  srand(1234);
  for (cl_int i = 0; i < n; ++i)
    host[i] = rand();
  cl_mem buf = clCreateBuffer(ctx, CL_MEM_READ_WRITE, sizeof(int) * n, NULL, &err);
  CHECK(err);

  double best = 1e300;
  for (int r = 0; r < repeats; ++r) {
    CHECK(clEnqueueWriteBuffer(g_queue, buf, CL_TRUE, 0, sizeof(int) * n, host,
                               0, NULL, NULL));
    double t0 = now();
    if (strcmp(mode, "sort") == 0) {
      sort(buf, n);
    } else if (strcmp(mode, "create") == 0) {
      for (long i = 0; i < launches; ++i) {
        cl_kernel knl = clCreateKernel(g_program, "swap_pairs_kernel", &err);
        CHECK(err);
        launch(knl, buf, 1, n, n, 1);
        CHECK(clReleaseKernel(knl));
      }
    } else {
      int with_event = strcmp(mode, "event") == 0;
      if (!with_event && strcmp(mode, "noevent") != 0) {
        fprintf(stderr, "unknown mode %s\n", mode);
        return 2;
      }
      for (long i = 0; i < launches; ++i)
        launch(g_kernel, buf, 1, n, n, with_event);
    }
    CHECK(clFinish(g_queue));
    double t = now() - t0;
    if (t < best)
      best = t;
  }

  if (strcmp(mode, "sort") == 0) {
    CHECK(clEnqueueReadBuffer(g_queue, buf, CL_TRUE, 0, sizeof(int) * n, sorted,
                              0, NULL, NULL));
    qsort(host, n, sizeof(int), cmp_int);
    if (memcmp(host, sorted, sizeof(int) * n) != 0) {
      fprintf(stderr, "sort result is wrong\n");
      return 1;
    }
    printf("%.3f\n", 1e6 * best);
  } else {
    printf("%.3f\n", 1e6 * best / launches);
  }
  return 0;
}
