/* device.c — opening the device --device names (device.h). */
#include "device.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "messages.h"

int cli_online_cpus(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

void cli_cpu_model_name(char *out, size_t outlen)
{
    snprintf(out, outlen, "CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f == NULL) return;
    char line[512];
    while (fgets(line, sizeof line, f) != NULL) {
        if (strncmp(line, "model name", 10) != 0) continue;
        char *colon = strchr(line, ':');
        if (colon == NULL) continue;
        char *name = colon + 1;
        while (*name == ' ' || *name == '\t') name++;
        size_t len = strcspn(name, "\r\n");
        while (len > 0 && (name[len - 1] == ' ' || name[len - 1] == '\t')) len--;
        if (len > 0) snprintf(out, outlen, "%.*s", (int)len, name);
        break;
    }
    fclose(f);
}

static const char *no_gpu_reason(void)
{
    return CLI_BUILT_WITH_CUDA ? "no GPU found" : "no GPU found: coopreduce was built without CUDA";
}

int cli_open_cpu(cli_device *dev, int threads)
{
    coopreduce_status st = coopreduce_create_cpu(&dev->handle, threads);
    if (st != COOPREDUCE_SUCCESS) {
        cli_error("cannot create the CPU handle: %s", cli_library_message(NULL, st));
        return EXIT_ERROR;
    }
    dev->is_gpu = 0;
    dev->ordinal = -1;
    dev->threads = threads > 0 ? threads : cli_online_cpus();
    cli_cpu_model_name(dev->name, sizeof dev->name);
    return EXIT_OK;
}

/* Tries GPU `ordinal`. Returns 0, or -1 with the reason in why. */
static int try_open_gpu(cli_device *dev, int ordinal, char *why, size_t whylen)
{
    int count = 0;
    coopreduce_status st = coopreduce_gpu_count(&count);
    if (st != COOPREDUCE_SUCCESS) {
        snprintf(why, whylen, "cannot count GPUs: %s", cli_library_message(NULL, st));
        return -1;
    }
    if (count == 0) {
        snprintf(why, whylen, "%s", no_gpu_reason());
        return -1;
    }
    if (ordinal >= count) {
        snprintf(why, whylen, "there is no GPU %d (%d GPU%s found)", ordinal, count,
                 count == 1 ? "" : "s");
        return -1;
    }
    coopreduce_gpu_props props;
    st = coopreduce_gpu_props_get(ordinal, &props);
    if (st != COOPREDUCE_SUCCESS) {
        snprintf(why, whylen, "cannot query GPU %d: %s", ordinal, cli_library_message(NULL, st));
        return -1;
    }
    st = coopreduce_create_gpu(&dev->handle, ordinal);
    if (st != COOPREDUCE_SUCCESS) {
        snprintf(why, whylen, "cannot use GPU %d (%s, compute capability %d.%d): %s", ordinal,
                 props.name, props.cc_major, props.cc_minor, cli_library_message(NULL, st));
        dev->handle = NULL;
        return -1;
    }
    dev->is_gpu = 1;
    dev->ordinal = ordinal;
    dev->threads = 0;
    snprintf(dev->name, sizeof dev->name, "%s", props.name);
    return 0;
}

int cli_open_device(cli_device *dev, cli_device_kind kind, int ordinal, int threads,
                    const char *device_text)
{
    memset(dev, 0, sizeof *dev);
    char why[512];
    switch (kind) {
    case CLI_DEVICE_CPU: return cli_open_cpu(dev, threads);
    case CLI_DEVICE_GPU:
        if (try_open_gpu(dev, ordinal, why, sizeof why) != 0) {
            cli_error("--device %s: %s", device_text, why);
            return EXIT_ERROR;
        }
        return EXIT_OK;
    case CLI_DEVICE_AUTO:
        if (try_open_gpu(dev, 0, why, sizeof why) == 0) {
            snprintf(dev->auto_note, sizeof dev->auto_note, "--device auto chose gpu:0");
            return EXIT_OK;
        }
        snprintf(dev->auto_note, sizeof dev->auto_note, "--device auto fell back to the CPU: %s",
                 why);
        return cli_open_cpu(dev, threads);
    }
    return EXIT_ERROR;
}
