// Reset and fault handling for the Cortex-M boards: the vector table, the
// C run-time set-up (.data copied from flash, .bss cleared), and fault
// handlers that report the faulting PC on the console and end the program.

#include "npukit/board.h"

extern uint32_t __npukit_stack_top[];
extern uint32_t __npukit_data_load[];
extern uint32_t __npukit_data_start[];
extern uint32_t __npukit_data_end[];
extern uint32_t __npukit_bss_start[];
extern uint32_t __npukit_bss_end[];

int main(void);
void board_paint_stack(void);
void Reset_Handler(void);

static const char* const fault_names[] = {
    "NMI", "HardFault", "MemManage", "BusFault", "UsageFault", "SVCall", "DebugMonitor", "PendSV", "SysTick", "IRQ",
};

// Called from the handlers below with the exception frame the CPU stacked.
void board_fault(const uint32_t* frame, uint32_t which) __attribute__((noreturn, used));
void board_fault(const uint32_t* frame, uint32_t which) {
  volatile const uint32_t* scb = (volatile const uint32_t*)0xE000ED00u;
  uint32_t cfsr = scb[0x28 / 4], hfsr = scb[0x2C / 4], mmfar = scb[0x34 / 4], bfar = scb[0x38 / 4];
  board_print("\nnpukit: fault ");
  board_print(fault_names[which < 10 ? which : 9]);
  board_print(": pc=0x");
  uint32_t words[6] = {frame[6], frame[5], cfsr, hfsr, mmfar, bfar};
  static const char* const labels[6] = {"", " lr=0x", " cfsr=0x", " hfsr=0x", " mmfar=0x", " bfar=0x"};
  for (int i = 0; i < 6; ++i) {
    uint8_t be[4] = {(uint8_t)(words[i] >> 24), (uint8_t)(words[i] >> 16), (uint8_t)(words[i] >> 8),
                     (uint8_t)words[i]};
    board_print(labels[i]);
    board_print_hex(be, 4);
  }
  board_print("\n");
  board_exit(NPUKIT_BOARD_EXIT_FAULT);
}

// Each handler passes the stack the frame is on and its own number.
#define FAULT_HANDLER(name, number)                                  \
  __attribute__((naked)) void name(void) {                          \
    __asm volatile(                                                  \
        "tst lr, #4\n"                                               \
        "ite eq\n"                                                   \
        "mrseq r0, msp\n"                                            \
        "mrsne r0, psp\n"                                            \
        "movs r1, #" #number "\n"                                    \
        "b board_fault\n");                                          \
  }
FAULT_HANDLER(NMI_Handler, 0)
FAULT_HANDLER(HardFault_Handler, 1)
FAULT_HANDLER(MemManage_Handler, 2)
FAULT_HANDLER(BusFault_Handler, 3)
FAULT_HANDLER(UsageFault_Handler, 4)
FAULT_HANDLER(SVC_Handler, 5)
FAULT_HANDLER(DebugMon_Handler, 6)
FAULT_HANDLER(PendSV_Handler, 7)
FAULT_HANDLER(SysTick_Handler, 8)
FAULT_HANDLER(Default_Handler, 9)

typedef void (*vector_t)(void);

// 16 system exceptions and 32 external interrupts (none is enabled).
__attribute__((section(".vectors"), used)) const vector_t board_vectors[48] = {
    (vector_t)__npukit_stack_top,
    Reset_Handler,
    NMI_Handler,
    HardFault_Handler,
    MemManage_Handler,
    BusFault_Handler,
    UsageFault_Handler,
    0,
    0,
    0,
    0,
    SVC_Handler,
    DebugMon_Handler,
    0,
    PendSV_Handler,
    SysTick_Handler,
    [16 ... 47] = Default_Handler,
};

void Reset_Handler(void) {
  for (uint32_t *src = __npukit_data_load, *dst = __npukit_data_start; dst < __npukit_data_end;) *dst++ = *src++;
  for (uint32_t* dst = __npukit_bss_start; dst < __npukit_bss_end;) *dst++ = 0;
#if defined(__ARM_FP)
  // Full access to CP10 and CP11 (the FPU) before any floating-point code.
  *(volatile uint32_t*)0xE000ED88u |= 0xFu << 20;
  __asm volatile("dsb\nisb");
#endif
  // Usage, bus and memory faults get their own handlers.
  *(volatile uint32_t*)0xE000ED24u |= (1u << 16) | (1u << 17) | (1u << 18);
  board_paint_stack();
  board_init();
  board_exit(main());
}
