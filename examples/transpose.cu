// Tiled matrix transpose through shared memory, padded against bank conflicts.
#define TILE_DIM 32
#define BLOCK_ROWS 8

__global__ void transpose(float* __restrict__ odata, const float* __restrict__ idata,
                          int width, int height) {
  __shared__ float tile[TILE_DIM][TILE_DIM + 1];

  int x = blockIdx.x * TILE_DIM + threadIdx.x;
  int y = blockIdx.y * TILE_DIM + threadIdx.y;
  for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
    if (x < width && y + j < height) tile[threadIdx.y + j][threadIdx.x] = idata[(y + j) * width + x];
  }
  __syncthreads();

  x = blockIdx.y * TILE_DIM + threadIdx.x;
  y = blockIdx.x * TILE_DIM + threadIdx.y;
  for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
    if (x < height && y + j < width) odata[(y + j) * height + x] = tile[threadIdx.x][threadIdx.y + j];
  }
}

void transpose_8192(float* out, const float* in) {
  const int n = 8192;
  dim3 block(TILE_DIM, BLOCK_ROWS);
  dim3 grid((n + TILE_DIM - 1) / TILE_DIM, (n + TILE_DIM - 1) / TILE_DIM);
  transpose<<<grid, block>>>(out, in, n, n);
}
