# nb_mica and nb_nanopu_mica run on 16 cores: its own copy of the runtime, built with
# NANOPU_MAX_HARTS = 16 (the other programs keep the SDK's 8, so their
# memory layout does not move), and a store sized for 1.6 M pairs.
# loopback_16core_full uses the same runtime copy (16 serving cores).
NB16_FLAGS := -DNANOPU_MAX_HARTS=16
NB16_DIR := $(BUILD)/lib16
NB16_CRT := $(NB16_DIR)/crt.S.o
NB16_LIB := $(NB16_DIR)/libnanopu.a
NB16_OBJS := $(patsubst lib/%,$(NB16_DIR)/%.o,$(LIB_SRCS))
nb_mica_CFLAGS := $(NB16_FLAGS) -DMICA_INDEX_IN_FREE_MEMORY -DMICA_PARTITION_BITS=6 -DMICA_BUCKETS=8192 \
	-DMICA_EXTRA_BUCKETS=2048 '-DMICA_LOG_BYTES=(16UL << 20)'
nb_nanopu_mica_CFLAGS := $(nb_mica_CFLAGS)
PROGRAMS := $(filter-out nb_mica nb_nanopu_mica loopback_16core_full,$(PROGRAMS))

$(NB16_DIR)/%.c.o: lib/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LIB_CFLAGS) $(NB16_FLAGS) -c -o $@ $<

$(NB16_DIR)/%.S.o: lib/%.S
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(NB16_FLAGS) -c -o $@ $<

$(NB16_LIB): $(NB16_OBJS)
	@rm -f $@
	$(AR) rcs $@ $^

define NB16_template
$(BUILD)/obj/$(1)/%.c.o: programs/$(1)/%.c programs/mica/mica.h include/nebula.h
	@mkdir -p $$(dir $$@)
	$$(CC) $$(CFLAGS) $$(nb_mica_CFLAGS) -c -o $$@ $$<
$(BUILD)/$(1).elf: $(BUILD)/obj/$(1)/$(1).c.o $(NB16_CRT) $(NB16_LIB) lib/link.ld
	$$(CC) $$(CFLAGS) $$(LDFLAGS) -o $$@ $(NB16_CRT) $(BUILD)/obj/$(1)/$(1).c.o $(NB16_LIB)
$(BUILD)/$(1).regs-ok: $(BUILD)/$(1).elf $(RUNTIME_SYMS) tools/check-regs.sh
	OBJDUMP=$$(OBJDUMP) OBJCOPY=$$(OBJCOPY) sh tools/check-regs.sh $$(if $$(V),-v) $(RUNTIME_SYMS) $$<
	@touch $$@
$(1): $(BUILD)/$(1).elf $(BUILD)/$(1).regs-ok
.PHONY: $(1)
endef
$(foreach p,nb_mica nb_nanopu_mica loopback_16core_full,$(eval $(call NB16_template,$(p))))
