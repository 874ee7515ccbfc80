; Top-level items of a CUDA file. Run over the whole tree.

; __global__ kernels: definitions, and prototypes of kernels defined elsewhere.
(function_definition
  "__global__"
  declarator: (function_declarator declarator: (_) @kernel.name)) @kernel
(declaration
  "__global__"
  declarator: (function_declarator declarator: (_) @kernel.name)) @kernel

; __device__ functions (also __host__ __device__), returning values or pointers.
(function_definition
  "__device__"
  declarator: [
    (function_declarator declarator: (_) @device.name)
    (pointer_declarator declarator: (function_declarator declarator: (_) @device.name))
    (reference_declarator (function_declarator declarator: (_) @device.name))
  ]) @device
(declaration
  "__device__"
  declarator: [
    (function_declarator declarator: (_) @device.name)
    (pointer_declarator declarator: (function_declarator declarator: (_) @device.name))
  ]) @device

; Launch sites: kernel<<<grid, block, smem, stream>>>(args).
(call_expression
  function: (_) @launch.callee
  (kernel_call_syntax) @launch.config
  arguments: (argument_list) @launch.args) @launch

; Object-like macros; function-like macros are preproc_function_def and are not constants.
(preproc_def
  name: (identifier) @define.name
  value: (preproc_arg)? @define.value) @define

; File- or namespace-scope named constants: const int N = 4; constexpr int kBlock = 256;
(translation_unit
  (declaration
    (type_qualifier) @constant.qualifier
    declarator: (init_declarator
      declarator: (identifier) @constant.name
      value: (_) @constant.value)) @constant)
(namespace_definition
  body: (declaration_list
    (declaration
      (type_qualifier) @constant.qualifier
      declarator: (init_declarator
        declarator: (identifier) @constant.name
        value: (_) @constant.value)) @constant))
