/*
 * Test driver for C exported by `nnapi export --target c` (tests/converters/test_export.py).
 * Built with -DEXPORT_HEADER='"NAME_model.h"' -DEXPORT_PREFIX=NAME -DEXPORT_UPPER=UPPERCASE_NAME
 * and linked with converters/export/ndk/shim.c. Usage: main WEIGHTS_PATH|- [device]
 *
 * Creates the model, compiles it (for one fake device with "device"), runs one
 * inference on input k filled with bytes (k * 7 + i) & 0xff, and prints the
 * result code of each step ("create 0", "compile 0", "run 0"), stopping at
 * the first failure; then frees everything it holds.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include EXPORT_HEADER

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define FN(suffix) CAT(EXPORT_PREFIX, suffix)
#define INPUT_COUNT CAT(EXPORT_UPPER, _INPUT_COUNT)
#define OUTPUT_COUNT CAT(EXPORT_UPPER, _OUTPUT_COUNT)

typedef CAT(EXPORT_PREFIX, _Model) ExportedModel;

static int all_zero(const void* p, size_t n) {
    const unsigned char* b = (const unsigned char*)p;
    for (size_t i = 0; i < n; i++)
        if (b[i]) return 0;
    return 1;
}

static int run(ANeuralNetworksCompilation* compilation) {
    const uint32_t n_in = INPUT_COUNT, n_out = OUTPUT_COUNT;
    void** ins = calloc(n_in + 1, sizeof *ins);
    void** outs = calloc(n_out + 1, sizeof *outs);
    for (uint32_t k = 0; k < n_in; k++) {
        size_t size = FN(_input_bytes)(k);
        unsigned char* b = malloc(size + 1);
        for (size_t i = 0; i < size; i++) b[i] = (unsigned char)((k * 7 + i) & 0xff);
        ins[k] = b;
    }
    for (uint32_t k = 0; k < n_out; k++) {
        size_t size = FN(_output_bytes)(k);
        outs[k] = malloc(size + 1);
        memset(outs[k], 0xab, size + 1);
    }
    int rc = FN(_run)(compilation, (const void* const*)ins, NULL, outs, NULL);
    printf("run %d\n", rc);
    if (rc == ANEURALNETWORKS_NO_ERROR) {
        int zeroed = 1;
        for (uint32_t k = 0; k < n_out; k++) zeroed &= all_zero(outs[k], FN(_output_bytes)(k));
        printf("outputs_written %d\n", zeroed);
        for (uint32_t k = 0; k < n_out; k++) printf("output %u %s\n", k, FN(_output_name)(k));
    }
    for (uint32_t k = 0; k < n_in; k++) free(ins[k]);
    for (uint32_t k = 0; k < n_out; k++) free(outs[k]);
    free(ins);
    free(outs);
    return rc;
}

int main(int argc, char** argv) {
    const char* weights = argc > 1 && strcmp(argv[1], "-") != 0 ? argv[1] : NULL;
    int use_device = argc > 2 && strcmp(argv[2], "device") == 0;
    ExportedModel model;
    int rc = FN(_create_model)(weights, &model);
    printf("create %d\n", rc);
    if (rc != ANEURALNETWORKS_NO_ERROR) {
        printf("zeroed %d\n", all_zero(&model, sizeof model));
        return 0;
    }
    static int fake_device;
    const ANeuralNetworksDevice* devices[1] = {(const ANeuralNetworksDevice*)(void*)&fake_device};
    ANeuralNetworksCompilation* compilation = NULL;
    rc = FN(_compile)(&model, ANEURALNETWORKS_PREFER_SUSTAINED_SPEED, use_device ? devices : NULL,
                      use_device ? 1u : 0u, &compilation);
    printf("compile %d\n", rc);
    if (rc == ANEURALNETWORKS_NO_ERROR) run(compilation);
    ANeuralNetworksCompilation_free(compilation);
    FN(_free_model)(&model);
    return 0;
}
