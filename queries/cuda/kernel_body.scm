; Execution choices inside a kernel body. Run only over kernel bodies.

; #pragma unroll and #pragma unroll N
(preproc_call
  directive: (preproc_directive) @_directive
  argument: (preproc_arg) @pragma.argument
  (#eq? @_directive "#pragma")
  (#match? @pragma.argument "^\\s*unroll(\\s|$)")) @pragma

; blockDim.x / .y / .z
(field_expression
  argument: (identifier) @_object
  field: (field_identifier)
  (#eq? @_object "blockDim")) @block_dim

; A loop stride: for (...; ...; i += 256). The extraction keeps those fixed at compile time.
(for_statement
  update: (assignment_expression
    operator: "+="
    right: (_) @stride))

; __shared__ declarations, static and extern.
(declaration
  (type_qualifier "__shared__")) @shared

; Every name, to find the #defines a kernel depends on.
(identifier) @name
