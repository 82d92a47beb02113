import { createContext, useContext } from 'react'

const ServerModeContext = createContext<string | undefined>(undefined)

/** ServerModeProvider gives the views below it the server's mode ("mock" or "live"), once known. */
export const ServerModeProvider = ServerModeContext.Provider

/** useServerMode returns the server's mode, or undefined until it is known. */
export function useServerMode(): string | undefined {
  return useContext(ServerModeContext)
}
