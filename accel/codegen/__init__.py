"""OpenCL C generation shared by every kernel family: the dtype policy (`types`), the program
preamble and template rendering (`source`), a kernel's parameters and canonical names
(`args`), tensor access through strides with broadcasting (`access`), the element-wise
formulas both kernel forms render (`formulas`), and the one post-op generator (`epilogue`)
with its op table (`ops`)."""
