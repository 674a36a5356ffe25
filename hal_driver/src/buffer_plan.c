#include "npukit/hal/buffer_plan.h"

#define PLAN_ALIGNMENT 64u

iree_status_t npukit_buffer_plan_verify(const npukit_buffer_plan_t* plan) {
  if (plan->count > NPUKIT_BUFFER_PLAN_MAX_ENTRIES || plan->persistent_count > plan->count) {
    return iree_make_status(IREE_STATUS_INVALID_ARGUMENT, "a memory plan of %u entries (%u persistent); at most %d",
                            plan->count, plan->persistent_count, NPUKIT_BUFFER_PLAN_MAX_ENTRIES);
  }
  for (uint32_t i = 0; i < plan->count; ++i) {
    const npukit_buffer_plan_entry_t* e = &plan->entries[i];
    if (e->offset % PLAN_ALIGNMENT != 0 || e->offset > plan->size || e->length > plan->size - e->offset) {
      return iree_make_status(IREE_STATUS_INVALID_ARGUMENT,
                              "memory plan entry %u (%u bytes at %u) is outside the %u-byte block or unaligned", i,
                              e->length, e->offset, plan->size);
    }
  }
  return iree_ok_status();
}

void npukit_buffer_planner_initialize(const npukit_buffer_plan_t* plan, uint8_t* base,
                                      npukit_buffer_planner_t* out_planner) {
  memset(out_planner, 0, sizeof(*out_planner));
  out_planner->plan = plan;
  out_planner->base = base;
}

static bool overlaps(const npukit_buffer_plan_entry_t* a, const npukit_buffer_plan_entry_t* b) {
  return a->offset < b->offset + b->length && b->offset < a->offset + a->length;
}

iree_status_t npukit_buffer_planner_take(npukit_buffer_planner_t* planner, iree_host_size_t length,
                                         iree_host_size_t alignment, uint8_t** out_data, uint32_t* out_entry) {
  const npukit_buffer_plan_t* plan = planner->plan;
  if (planner->next >= plan->count) {
    return iree_make_status(IREE_STATUS_FAILED_PRECONDITION,
                            "a buffer of %zu bytes was requested beyond the memory plan's %u buffers", length,
                            plan->count);
  }
  uint32_t index = planner->next;
  const npukit_buffer_plan_entry_t* entry = &plan->entries[index];
  if (entry->length != length || alignment > PLAN_ALIGNMENT) {
    return iree_make_status(IREE_STATUS_FAILED_PRECONDITION,
                            "a buffer of %zu bytes (alignment %zu) does not match the memory plan, whose buffer %u "
                            "has %u bytes: the module allocates differently from its compile-time plan",
                            length, alignment, index, entry->length);
  }
  for (uint32_t i = 0; i < plan->count; ++i) {
    if (((planner->live >> i) & 1u) && overlaps(entry, &plan->entries[i])) {
      return iree_make_status(IREE_STATUS_FAILED_PRECONDITION,
                              "planned buffer %u (%u bytes at %u) overlaps buffer %u, which is still in use", index,
                              entry->length, entry->offset, i);
    }
  }
  planner->live |= (uint64_t)1 << index;
  planner->next = index + 1 == plan->count ? plan->persistent_count : index + 1;
  planner->allocations++;
  iree_host_size_t end = (iree_host_size_t)entry->offset + entry->length;
  if (end > planner->high_water_mark) planner->high_water_mark = end;
  *out_data = planner->base + entry->offset;
  *out_entry = index;
  return iree_ok_status();
}

void npukit_buffer_planner_release(npukit_buffer_planner_t* planner, uint32_t entry) {
  if (entry < NPUKIT_BUFFER_PLAN_MAX_ENTRIES) planner->live &= ~((uint64_t)1 << entry);
}
