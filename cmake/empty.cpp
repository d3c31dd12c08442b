// An empty source: libdtensor_all.so (DT_STATIC_LLVM) is made of the layer archives alone.
