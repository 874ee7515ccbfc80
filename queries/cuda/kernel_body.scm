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

; A loop stride that is a literal or a name: for (...; ...; i += 256)
(for_statement
  update: (assignment_expression
    operator: "+="
    right: [(number_literal) (identifier)] @stride))

; __shared__ declarations, static and extern.
(declaration
  (type_qualifier "__shared__")) @shared

; Every name, to find the #defines a kernel depends on.
(identifier) @name
