/* api.h — what the facade's files share. The facade (src/api) checks arguments, makes the plan
 * and calls down into a backend; it computes nothing itself. */
#ifndef COOPREDUCE_API_H
#define COOPREDUCE_API_H

#include "core/dtype.h"
#include "core/handle.h"
#include "core/plan.h"
#include "core/status.h"
#include "cpu/cpu.h"
#include "gpu/gpu.h"

#define CR_EXPORT __attribute__((visibility("default")))

#endif
