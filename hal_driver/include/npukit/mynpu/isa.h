// mynpu's instruction set, hardware configuration and counters
// (docs/mynpu-isa.md is the specification; the names here follow it).
#ifndef NPUKIT_MYNPU_ISA_H_
#define NPUKIT_MYNPU_ISA_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// A command is one 32-bit word (opcode, arg, imm16) in its short form
// (opcode bit 6 set) or two words (opcode, arg, 0, 0; value) in its long form.
#define NPUKIT_MYNPU_COMMAND_BYTES 8
#define NPUKIT_MYNPU_SHORT_COMMAND_BYTES 4
#define NPUKIT_MYNPU_SHORT_FORM 0x40u
#define NPUKIT_MYNPU_CONSTANTS_BINDING 0xFFu
#define NPUKIT_MYNPU_MAX_BINDINGS 8
#define NPUKIT_MYNPU_OP_OVERHEAD_CYCLES 16
#define NPUKIT_MYNPU_DMA_OVERHEAD_CYCLES 8
// OP_TABLE's table: one int8 output per int8 input, indexed by input + 128.
#define NPUKIT_MYNPU_TABLE_BYTES 256

typedef enum {
  NPUKIT_MYNPU_SET = 0x01,
  NPUKIT_MYNPU_LAYER = 0x02,
  NPUKIT_MYNPU_OP_CONV = 0x10,
  NPUKIT_MYNPU_OP_CONV_RELU = 0x11,
  NPUKIT_MYNPU_OP_DEPTH_CONV = 0x12,
  NPUKIT_MYNPU_OP_MAT_MUL = 0x13,
  NPUKIT_MYNPU_OP_ACT_RELU = 0x14,
  NPUKIT_MYNPU_OP_ACT_LRELU = 0x15,
  NPUKIT_MYNPU_OP_POOL = 0x16,
  NPUKIT_MYNPU_OP_E_ABS = 0x17,
  NPUKIT_MYNPU_OP_C_MIN = 0x18,
  NPUKIT_MYNPU_OP_C_MAX = 0x19,
  NPUKIT_MYNPU_OP_E_ADD = 0x1A,
  NPUKIT_MYNPU_OP_E32_ADD = 0x1B,
  NPUKIT_MYNPU_OP_TABLE = 0x1C,
  NPUKIT_MYNPU_OP_E_MUL = 0x1D,
  NPUKIT_MYNPU_OP_DMA_READ = 0x20,
  NPUKIT_MYNPU_OP_DMA_WRITE = 0x21,
  NPUKIT_MYNPU_END = 0x3F,
} npukit_mynpu_opcode_t;

typedef enum {
  NPUKIT_MYNPU_IFM_ADDR, NPUKIT_MYNPU_IFM_H, NPUKIT_MYNPU_IFM_W, NPUKIT_MYNPU_IFM_C,
  NPUKIT_MYNPU_OFM_ADDR, NPUKIT_MYNPU_OFM_H, NPUKIT_MYNPU_OFM_W, NPUKIT_MYNPU_OFM_C,
  NPUKIT_MYNPU_WEIGHT_ADDR, NPUKIT_MYNPU_BIAS_ADDR, NPUKIT_MYNPU_QUANT_ADDR,
  NPUKIT_MYNPU_KERNEL_H, NPUKIT_MYNPU_KERNEL_W, NPUKIT_MYNPU_STRIDE_H, NPUKIT_MYNPU_STRIDE_W,
  NPUKIT_MYNPU_PAD_TOP, NPUKIT_MYNPU_PAD_LEFT, NPUKIT_MYNPU_DILATION_H, NPUKIT_MYNPU_DILATION_W,
  NPUKIT_MYNPU_IFM_ZP, NPUKIT_MYNPU_OFM_ZP, NPUKIT_MYNPU_ACT_MIN, NPUKIT_MYNPU_ACT_MAX,
  NPUKIT_MYNPU_OUT_INT32, NPUKIT_MYNPU_IFM2_ADDR, NPUKIT_MYNPU_IFM2_ZP,
  NPUKIT_MYNPU_IFM_MULT, NPUKIT_MYNPU_IFM_SHIFT, NPUKIT_MYNPU_IFM2_MULT, NPUKIT_MYNPU_IFM2_SHIFT,
  NPUKIT_MYNPU_OUT_MULT, NPUKIT_MYNPU_OUT_SHIFT, NPUKIT_MYNPU_LEFT_SHIFT,
  NPUKIT_MYNPU_DMA_BINDING, NPUKIT_MYNPU_DMA_OFFSET, NPUKIT_MYNPU_DMA_SRAM_ADDR, NPUKIT_MYNPU_DMA_LENGTH,
  NPUKIT_MYNPU_DMA_ROWS, NPUKIT_MYNPU_DMA_SYS_STRIDE, NPUKIT_MYNPU_DMA_SRAM_STRIDE, NPUKIT_MYNPU_LAYOUT,
  NPUKIT_MYNPU_DMA_PLANES, NPUKIT_MYNPU_DMA_SYS_PLANE_STRIDE, NPUKIT_MYNPU_DMA_SRAM_PLANE_STRIDE,
  NPUKIT_MYNPU_TABLE_ADDR,
  NPUKIT_MYNPU_REGISTER_COUNT
} npukit_mynpu_register_t;

// OP_E_MUL's arg: where the IFM2 value of each IFM element comes from.
typedef enum {
  NPUKIT_MYNPU_E_MUL_SAME = 0,      // element i of an IFM2 of the IFM's size
  NPUKIT_MYNPU_E_MUL_CHANNELS = 1,  // element i mod IFM_C: one value per channel, every pixel (HWC)
  NPUKIT_MYNPU_E_MUL_ONE = 2,       // its one element
} npukit_mynpu_e_mul_broadcast_t;

// How conv, depthwise and pool find element (y, x, c) of an H x W x C tensor.
typedef enum {
  NPUKIT_MYNPU_LAYOUT_HWC = 0,  // ((y * W + x) * C + c)
  NPUKIT_MYNPU_LAYOUT_CHW = 1,  // ((c * H + y) * W + x): channel planes
} npukit_mynpu_layout_t;

// How convolutions, depthwise convolutions, matmuls and pools use the PEs
// (docs/mynpu-isa.md, "Cycle model").
typedef enum {
  NPUKIT_MYNPU_PARALLEL_OUTPUT = 0,         // output channels
  NPUKIT_MYNPU_PARALLEL_INPUT = 1,          // input channels
  NPUKIT_MYNPU_PARALLEL_OUTPUT_PIXELS = 2,  // a grid of output channels x output pixels
} npukit_mynpu_parallelism_t;

// The largest SRAM a configuration may have (1 GiB).
#define NPUKIT_MYNPU_MAX_SRAM_BYTES (1u << 30)

typedef struct {
  uint32_t pes;
  uint32_t sram_bytes;
  uint32_t parallelism;  // npukit_mynpu_parallelism_t
  uint32_t dma_bytes_per_cycle;
  uint32_t clock_mhz;
  uint32_t instruction_mask;  // bit (opcode - 0x10): the instruction exists
} npukit_mynpu_config_t;

// What a stream cost, summed over its instructions.
typedef struct {
  uint64_t macs;
  uint64_t compute_cycles;
  uint64_t dma_bytes;
  uint64_t dma_cycles;
  uint64_t cycles;  // by the layer rule: max(compute, DMA) when double-buffered, else the sum
  uint64_t instructions;
  uint32_t layers;
  uint32_t sram_high_water;  // highest SRAM byte written + 1
  uint32_t sram_extent;      // highest SRAM byte read or written + 1: the SRAM the stream needs
} npukit_mynpu_counters_t;

// What one instruction cost (the per-instruction record of a stream run).
typedef struct {
  uint32_t command_index;  // position of the instruction in the stream
  uint32_t layer;          // the layer it belongs to
  uint32_t opcode;
  uint32_t reserved;
  uint64_t macs;
  uint64_t compute_cycles;  // overhead included; 0 for DMA
  uint64_t dma_bytes;
  uint64_t dma_cycles;  // overhead included; 0 for compute
} npukit_mynpu_instruction_cost_t;

#ifdef __cplusplus
}
#endif

#endif  // NPUKIT_MYNPU_ISA_H_
