import { createContext, useContext } from 'react'
import { Client } from './client'

const ApiContext = createContext<Client>(new Client())

/** ApiProvider gives the components below it the API client. */
export const ApiProvider = ApiContext.Provider

/** useApi returns the API client. */
export function useApi(): Client {
  return useContext(ApiContext)
}
