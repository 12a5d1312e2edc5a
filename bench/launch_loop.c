/* The C limit for bench/launch_overhead.py: the same kernel launches as the
 * Python paths, made directly against the system's OpenCL ICD loader.
 *
 * Built at run time as a shared library and called through ctypes with the
 * handles of the benchmark's own queue, program, kernel and buffer, so the C
 * loop runs in the same process, on the same queue, interleaved with the
 * Python paths it is compared with.
 *
 * Each function returns the wall time in seconds of its loop, which ends
 * with clFinish, or a negative OpenCL error code.
 */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <string.h>
#include <time.h>

static double now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static cl_int launch(cl_command_queue queue, cl_kernel knl, cl_mem buf,
                     cl_int x, cl_int n, size_t gsize, int with_event)
{
  cl_event evt;
  cl_int err;
  if ((err = clSetKernelArg(knl, 0, sizeof(cl_mem), &buf))
      || (err = clSetKernelArg(knl, 1, sizeof(cl_int), &x))
      || (err = clSetKernelArg(knl, 2, sizeof(cl_int), &n))
      || (err = clEnqueueNDRangeKernel(queue, knl, 1, NULL, &gsize, NULL, 0,
                                       NULL, with_event ? &evt : NULL)))
    return err;
  return with_event ? clReleaseEvent(evt) : CL_SUCCESS;
}

/* mode 0: an event per launch (released at once), as PyOpenCL does
 * mode 1: no event
 * mode 2: clCreateKernel + launch with event + clReleaseKernel, each launch */
double launch_loop(cl_command_queue queue, cl_program program,
                   cl_kernel kernel, const char *kernel_name, cl_mem buf,
                   int mode, long launches, cl_int n)
{
  cl_int err = CL_SUCCESS;
  double t0 = now();
  for (long i = 0; i < launches && err == CL_SUCCESS; ++i)
  {
    if (mode == 2)
    {
      cl_kernel knl = clCreateKernel(program, kernel_name, &err);
      if (err == CL_SUCCESS)
      {
        err = launch(queue, knl, buf, 1, n, n, 1);
        clReleaseKernel(knl);
      }
    }
    else
      err = launch(queue, kernel, buf, 1, n, n, mode == 0);
  }
  if (err == CL_SUCCESS)
    err = clFinish(queue);
  return err == CL_SUCCESS ? now() - t0 : (double) (err < 0 ? err : -err);
}

/* The bitonic sort of #830: n = 2**k ints, swap-pairs kernel. */
double bitonic_sort(cl_command_queue queue, cl_kernel kernel, cl_mem buf,
                    cl_int n)
{
  cl_int err = CL_SUCCESS;
  double t0 = now();
  for (cl_int k = 2; k <= n && err == CL_SUCCESS; k <<= 1)
  {
    err = launch(queue, kernel, buf, k - 1, n, n, 1);
    for (cl_int j = k >> 1; j > 0 && err == CL_SUCCESS; j >>= 1)
      err = launch(queue, kernel, buf, j, n, n, 1);
  }
  if (err == CL_SUCCESS)
    err = clFinish(queue);
  return err == CL_SUCCESS ? now() - t0 : (double) (err < 0 ? err : -err);
}
