import { cleanup } from '@testing-library/react'
import { afterEach } from 'vitest'

// jsdom has no layout and no ResizeObserver: charts then keep the initial
// size they are given instead of measuring their container.

afterEach(() => cleanup())
