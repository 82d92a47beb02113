import { StrictMode } from 'react'
import { createRoot } from 'react-dom/client'
import { BrowserRouter } from 'react-router'
import { App } from './App'
import { Client } from './api/client'
import { ApiProvider } from './api/context'
import { storedToken } from './views/Settings'
import './styles.css'

const client = new Client({ token: storedToken })

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <ApiProvider value={client}>
      <BrowserRouter>
        <App />
      </BrowserRouter>
    </ApiProvider>
  </StrictMode>,
)
