#include "trace/trace-hw_vfio_gpu_p2p.h"
