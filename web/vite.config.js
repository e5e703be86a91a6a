import { defineConfig } from 'vite';

// The pages (GraphiQL, sign-in, invitation); their assets are content-hashed under /assets/
// and embedded in the nebula binary (web/embed.go).
export default defineConfig({
  base: '/',
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    sourcemap: false,
    chunkSizeWarningLimit: 4096,
    rollupOptions: {
      input: { console: 'console.html', graphiql: 'graphiql.html', signin: 'signin.html', invitation: 'invitation.html' },
      // GraphiQL's dependencies mark modules "use client" (a React Server
      // Components hint, meaningless in a browser bundle).
      onwarn(warning, warn) {
        if (warning.code !== 'MODULE_LEVEL_DIRECTIVE') warn(warning);
      },
    },
  },
});
