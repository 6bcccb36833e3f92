/*
 * A recording stand-in for Android's libneuralnetworks, for testing the C code
 * that `nnapi export --target c` generates on a machine without Android.
 *
 * Every ANeuralNetworks* function declared in NeuralNetworks.h (beside this
 * file) is implemented by appending one line to the trace file named by the
 * environment variable NNAPI_SHIM_TRACE (standard error when unset):
 *
 *     CALL key=value key=value ...
 *
 * with the NNAPI function name without its "ANeuralNetworks" prefix as CALL,
 * objects named by ids (model=1, memory=2, ...: one counter for every object),
 * numbers in decimal, floats as the hex of their IEEE-754 bits (exact), lists
 * comma-separated ("-" when empty) and byte strings in hex ("-" when empty).
 * Every fallible call records its result as its last field, rc=N. Operand
 * values are recorded byte for byte: setOperandValue copies the caller's
 * buffer, setOperandValueFromMemory reads the bytes from the file mapped by
 * Memory_createFromFd at the given offset (as a device would).
 *
 * Failure injection: NNAPI_SHIM_FAIL="FUNCTION:N:CODE" makes the N-th call
 * (1-based) of FUNCTION (e.g. Model_addOperand) return CODE without doing
 * anything; FUNCTION "*" counts every fallible call. Execution does no
 * arithmetic: startCompute zero-fills every output buffer.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "NeuralNetworks.h"

struct ANeuralNetworksModel { int id; };
struct ANeuralNetworksMemory { int id; void* map; size_t map_size; size_t skip; size_t size; };
struct ANeuralNetworksCompilation { int id; };
struct ANeuralNetworksEvent { int id; };

enum { MAX_OUTPUTS = 256 };
struct ANeuralNetworksExecution { int id; void* out[MAX_OUTPUTS]; size_t out_len[MAX_OUTPUTS]; };

static FILE* trace_file;
static int next_id = 1;

static FILE* trace(void) {
    if (trace_file == NULL) {
        const char* path = getenv("NNAPI_SHIM_TRACE");
        trace_file = path ? fopen(path, "w") : NULL;
        if (trace_file == NULL) trace_file = stderr;
    }
    return trace_file;
}

static void put_hex(const void* data, size_t n) {
    const unsigned char* p = (const unsigned char*)data;
    if (n == 0 || p == NULL) { fputc('-', trace()); return; }
    for (size_t i = 0; i < n; i++) fprintf(trace(), "%02x", p[i]);
}

static void put_u32_list(const uint32_t* v, uint32_t n) {
    if (n == 0 || v == NULL) { fputc('-', trace()); return; }
    for (uint32_t i = 0; i < n; i++) fprintf(trace(), i ? ",%u" : "%u", v[i]);
}

static uint32_t float_bits(float f) { uint32_t u; memcpy(&u, &f, sizeof u); return u; }

static void end_line(int rc) { fprintf(trace(), " rc=%d\n", rc); fflush(trace()); }

/* The injected result of this call (0 = none), per NNAPI_SHIM_FAIL. */
static int injected(const char* function) {
    static int total;
    static int counts_matching;
    const char* spec = getenv("NNAPI_SHIM_FAIL");
    if (spec == NULL || *spec == '\0') return 0;
    const char* colon = strchr(spec, ':');
    if (colon == NULL) return 0;
    size_t len = (size_t)(colon - spec);
    int any = len == 1 && spec[0] == '*';
    if (!any && (strlen(function) != len || strncmp(function, spec, len) != 0)) return 0;
    int nth = 0, code = 0;
    if (sscanf(colon + 1, "%d:%d", &nth, &code) != 2) return 0;
    int seen = any ? ++total : ++counts_matching;
    return seen == nth ? code : 0;
}

#define BEGIN(function)                                     \
    int rc_ = injected(#function);                          \
    fprintf(trace(), "%s", #function);                      \
    if (rc_ != 0) { end_line(rc_); return rc_; }

static int model_id(const ANeuralNetworksModel* m) { return m ? m->id : 0; }

static void put_operand_type(const ANeuralNetworksOperandType* t) {
    if (t == NULL) { fprintf(trace(), " type=-"); return; }
    fprintf(trace(), " type=%d dims=", (int)t->type);
    put_u32_list(t->dimensions, t->dimensionCount);
    fprintf(trace(), " rank=%u scale=%08x zero_point=%d", t->dimensionCount, float_bits(t->scale), (int)t->zeroPoint);
}

/* -- memory ---------------------------------------------------------------- */

int ANeuralNetworksMemory_createFromFd(size_t size, int protect, int fd, size_t offset,
                                       ANeuralNetworksMemory** memory) {
    BEGIN(Memory_createFromFd)
    if (memory == NULL) { end_line(ANEURALNETWORKS_UNEXPECTED_NULL); return ANEURALNETWORKS_UNEXPECTED_NULL; }
    *memory = NULL;
    long page = sysconf(_SC_PAGESIZE);
    size_t skip = offset % (size_t)page;
    void* map = size ? mmap(NULL, size + skip, protect, MAP_SHARED, fd, (off_t)(offset - skip)) : MAP_FAILED;
    if (map == MAP_FAILED) {
        fprintf(trace(), " size=%zu offset=%zu", size, offset);
        end_line(ANEURALNETWORKS_UNMAPPABLE);
        return ANEURALNETWORKS_UNMAPPABLE;
    }
    ANeuralNetworksMemory* m = calloc(1, sizeof *m);
    m->id = next_id++; m->map = map; m->map_size = size + skip; m->skip = skip; m->size = size;
    *memory = m;
    fprintf(trace(), " memory=%d size=%zu protect=%d offset=%zu", m->id, size, protect, offset);
    end_line(0);
    return 0;
}

void ANeuralNetworksMemory_free(ANeuralNetworksMemory* memory) {
    fprintf(trace(), "Memory_free memory=%d\n", memory ? memory->id : 0);
    fflush(trace());
    if (memory) { munmap(memory->map, memory->map_size); free(memory); }
}

/* -- model ----------------------------------------------------------------- */

int ANeuralNetworksModel_create(ANeuralNetworksModel** model) {
    BEGIN(Model_create)
    ANeuralNetworksModel* m = calloc(1, sizeof *m);
    m->id = next_id++;
    *model = m;
    fprintf(trace(), " model=%d", m->id);
    end_line(0);
    return 0;
}

void ANeuralNetworksModel_free(ANeuralNetworksModel* model) {
    fprintf(trace(), "Model_free model=%d\n", model_id(model));
    fflush(trace());
    free(model);
}

int ANeuralNetworksModel_finish(ANeuralNetworksModel* model) {
    BEGIN(Model_finish)
    fprintf(trace(), " model=%d", model_id(model));
    end_line(0);
    return 0;
}

int ANeuralNetworksModel_addOperand(ANeuralNetworksModel* model, const ANeuralNetworksOperandType* type) {
    BEGIN(Model_addOperand)
    fprintf(trace(), " model=%d", model_id(model));
    put_operand_type(type);
    end_line(0);
    return 0;
}

int ANeuralNetworksModel_setOperandValue(ANeuralNetworksModel* model, int32_t index, const void* buffer,
                                         size_t length) {
    BEGIN(Model_setOperandValue)
    fprintf(trace(), " model=%d index=%d length=%zu null=%d data=", model_id(model), (int)index, length,
            buffer == NULL);
    put_hex(buffer, length);
    end_line(0);
    return 0;
}

int ANeuralNetworksModel_setOperandSymmPerChannelQuantParams(
    ANeuralNetworksModel* model, int32_t index, const ANeuralNetworksSymmPerChannelQuantParams* q) {
    BEGIN(Model_setOperandSymmPerChannelQuantParams)
    fprintf(trace(), " model=%d index=%d channel_dim=%u scales=", model_id(model), (int)index, q->channelDim);
    if (q->scaleCount == 0) fputc('-', trace());
    for (uint32_t i = 0; i < q->scaleCount; i++) fprintf(trace(), i ? ",%08x" : "%08x", float_bits(q->scales[i]));
    end_line(0);
    return 0;
}

int ANeuralNetworksModel_setOperandValueFromMemory(ANeuralNetworksModel* model, int32_t index,
                                                   const ANeuralNetworksMemory* memory, size_t offset,
                                                   size_t length) {
    BEGIN(Model_setOperandValueFromMemory)
    fprintf(trace(), " model=%d index=%d memory=%d offset=%zu length=%zu data=", model_id(model), (int)index,
            memory ? memory->id : 0, offset, length);
    if (memory == NULL || offset + length > memory->size) {
        fputc('-', trace());
        end_line(ANEURALNETWORKS_BAD_DATA);
        return ANEURALNETWORKS_BAD_DATA;
    }
    put_hex((const unsigned char*)memory->map + memory->skip + offset, length);
    end_line(0);
    return 0;
}

int ANeuralNetworksModel_setOperandValueFromModel(ANeuralNetworksModel* model, int32_t index,
                                                  const ANeuralNetworksModel* value) {
    BEGIN(Model_setOperandValueFromModel)
    fprintf(trace(), " model=%d index=%d value=%d", model_id(model), (int)index, model_id(value));
    end_line(0);
    return 0;
}

int ANeuralNetworksModel_addOperation(ANeuralNetworksModel* model, ANeuralNetworksOperationType type,
                                      uint32_t inputCount, const uint32_t* inputs, uint32_t outputCount,
                                      const uint32_t* outputs) {
    BEGIN(Model_addOperation)
    fprintf(trace(), " model=%d type=%d inputs=", model_id(model), (int)type);
    put_u32_list(inputs, inputCount);
    fprintf(trace(), " outputs=");
    put_u32_list(outputs, outputCount);
    end_line(0);
    return 0;
}

int ANeuralNetworksModel_identifyInputsAndOutputs(ANeuralNetworksModel* model, uint32_t inputCount,
                                                  const uint32_t* inputs, uint32_t outputCount,
                                                  const uint32_t* outputs) {
    BEGIN(Model_identifyInputsAndOutputs)
    fprintf(trace(), " model=%d inputs=", model_id(model));
    put_u32_list(inputs, inputCount);
    fprintf(trace(), " outputs=");
    put_u32_list(outputs, outputCount);
    end_line(0);
    return 0;
}

int ANeuralNetworksModel_relaxComputationFloat32toFloat16(ANeuralNetworksModel* model, bool allow) {
    BEGIN(Model_relaxComputationFloat32toFloat16)
    fprintf(trace(), " model=%d allow=%d", model_id(model), (int)allow);
    end_line(0);
    return 0;
}

/* -- compilation ----------------------------------------------------------- */

static int new_compilation(ANeuralNetworksCompilation** compilation) {
    ANeuralNetworksCompilation* c = calloc(1, sizeof *c);
    c->id = next_id++;
    *compilation = c;
    fprintf(trace(), " compilation=%d", c->id);
    end_line(0);
    return 0;
}

int ANeuralNetworksCompilation_create(ANeuralNetworksModel* model, ANeuralNetworksCompilation** compilation) {
    BEGIN(Compilation_create)
    fprintf(trace(), " model=%d", model_id(model));
    return new_compilation(compilation);
}

int ANeuralNetworksCompilation_createForDevices(ANeuralNetworksModel* model,
                                                const ANeuralNetworksDevice* const* devices,
                                                uint32_t numDevices, ANeuralNetworksCompilation** compilation) {
    BEGIN(Compilation_createForDevices)
    fprintf(trace(), " model=%d devices=%u all_set=%d", model_id(model), numDevices,
            devices != NULL && (numDevices == 0 || devices[numDevices - 1] != NULL));
    return new_compilation(compilation);
}

void ANeuralNetworksCompilation_free(ANeuralNetworksCompilation* compilation) {
    fprintf(trace(), "Compilation_free compilation=%d\n", compilation ? compilation->id : 0);
    fflush(trace());
    free(compilation);
}

int ANeuralNetworksCompilation_setPreference(ANeuralNetworksCompilation* compilation, int32_t preference) {
    BEGIN(Compilation_setPreference)
    fprintf(trace(), " compilation=%d preference=%d", compilation->id, (int)preference);
    end_line(0);
    return 0;
}

int ANeuralNetworksCompilation_finish(ANeuralNetworksCompilation* compilation) {
    BEGIN(Compilation_finish)
    fprintf(trace(), " compilation=%d", compilation->id);
    end_line(0);
    return 0;
}

/* -- execution ------------------------------------------------------------- */

int ANeuralNetworksExecution_create(ANeuralNetworksCompilation* compilation, ANeuralNetworksExecution** execution) {
    BEGIN(Execution_create)
    ANeuralNetworksExecution* e = calloc(1, sizeof *e);
    e->id = next_id++;
    *execution = e;
    fprintf(trace(), " compilation=%d execution=%d", compilation->id, e->id);
    end_line(0);
    return 0;
}

void ANeuralNetworksExecution_free(ANeuralNetworksExecution* execution) {
    fprintf(trace(), "Execution_free execution=%d\n", execution ? execution->id : 0);
    fflush(trace());
    free(execution);
}

int ANeuralNetworksExecution_setInput(ANeuralNetworksExecution* execution, int32_t index,
                                      const ANeuralNetworksOperandType* type, const void* buffer, size_t length) {
    BEGIN(Execution_setInput)
    fprintf(trace(), " execution=%d index=%d", execution->id, (int)index);
    put_operand_type(type);
    fprintf(trace(), " length=%zu data=", length);
    put_hex(buffer, length);
    end_line(0);
    return 0;
}

int ANeuralNetworksExecution_setOutput(ANeuralNetworksExecution* execution, int32_t index,
                                       const ANeuralNetworksOperandType* type, void* buffer, size_t length) {
    BEGIN(Execution_setOutput)
    fprintf(trace(), " execution=%d index=%d", execution->id, (int)index);
    put_operand_type(type);
    fprintf(trace(), " length=%zu", length);
    if (index < 0 || index >= MAX_OUTPUTS) { end_line(ANEURALNETWORKS_BAD_DATA); return ANEURALNETWORKS_BAD_DATA; }
    execution->out[index] = buffer;
    execution->out_len[index] = length;
    end_line(0);
    return 0;
}

int ANeuralNetworksExecution_startCompute(ANeuralNetworksExecution* execution, ANeuralNetworksEvent** event) {
    BEGIN(Execution_startCompute)
    for (int k = 0; k < MAX_OUTPUTS; k++)
        if (execution->out[k]) memset(execution->out[k], 0, execution->out_len[k]);
    ANeuralNetworksEvent* ev = calloc(1, sizeof *ev);
    ev->id = next_id++;
    *event = ev;
    fprintf(trace(), " execution=%d event=%d", execution->id, ev->id);
    end_line(0);
    return 0;
}

int ANeuralNetworksEvent_wait(ANeuralNetworksEvent* event) {
    BEGIN(Event_wait)
    fprintf(trace(), " event=%d", event->id);
    end_line(0);
    return 0;
}

void ANeuralNetworksEvent_free(ANeuralNetworksEvent* event) {
    fprintf(trace(), "Event_free event=%d\n", event ? event->id : 0);
    fflush(trace());
    free(event);
}
