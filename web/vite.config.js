import { defineConfig } from 'vite';

// One page today (GraphiQL); its assets are content-hashed under /assets/
// and embedded in the nebula binary (web/embed.go).
export default defineConfig({
  base: '/',
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    sourcemap: false,
    chunkSizeWarningLimit: 4096,
    rollupOptions: {
      input: { graphiql: 'graphiql.html' },
      // GraphiQL's dependencies mark modules "use client" (a React Server
      // Components hint, meaningless in a browser bundle).
      onwarn(warning, warn) {
        if (warning.code !== 'MODULE_LEVEL_DIRECTIVE') warn(warning);
      },
    },
  },
});
