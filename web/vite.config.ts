import { defineConfig } from 'vitest/config'

// The build must be reproducible: the same sources and lockfile give a
// byte-identical dist/, which is committed and embedded in the Go binary
// (CI rebuilds it and fails when the committed copy is stale). Nothing here
// may depend on the time, the machine or the checkout's path.
export default defineConfig({
  base: '/',
  esbuild: { jsx: 'automatic' },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    assetsDir: 'assets',
    sourcemap: false,
    target: 'es2022',
    chunkSizeWarningLimit: 1024,
    rollupOptions: {
      onwarn(warning, warn) {
        // Libraries' "use client" directives mean nothing in a client-only bundle.
        if (warning.code === 'MODULE_LEVEL_DIRECTIVE') return
        warn(warning)
      },
      output: {
        // Charts are the largest dependency and change least often: a
        // separate chunk keeps the app's own chunk small and cacheable.
        manualChunks(id) {
          if (id.includes('node_modules/recharts') || id.includes('node_modules/d3-') || id.includes('node_modules/victory-vendor')) {
            return 'charts'
          }
          if (id.includes('node_modules/')) {
            return 'vendor'
          }
          return undefined
        },
      },
    },
  },
  server: {
    // `npm run dev` against a `madspark serve` on the default address.
    proxy: {
      '/api': 'http://127.0.0.1:8080',
      '/health': 'http://127.0.0.1:8080',
      '/ws': { target: 'ws://127.0.0.1:8080', ws: true },
    },
  },
  test: {
    environment: 'jsdom',
    setupFiles: ['src/test/setup.ts'],
    include: ['src/**/*.test.{ts,tsx}'],
    // A form test types a few dozen keys: on a loaded machine that takes
    // longer than vitest's 5 s, and the tests wait on the page, not a clock.
    testTimeout: 20000,
  },
})
